package emu

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"unsafe"

	"github.com/headroom-ml/headroom/dtype"
)

// Data and compute types of cuBLAS.
const (
	r32F, r64F, r16F, r16BF      = 0, 1, 2, 14
	compute32F, compute64F, tf32 = 68, 70, 74
)

// encoding turns float64 values into a cuBLAS data type's bytes and back.
type encoding struct {
	name   string
	size   int
	encode func(float64) []byte
	decode func([]byte) float64
	eps    float64 // relative rounding of a stored result
}

var encodings = map[int]encoding{
	r32F: {"f32", 4, func(v float64) []byte { return le32(math.Float32bits(float32(v))) },
		func(b []byte) float64 { return float64(math.Float32frombits(ule32(b))) }, 0x1p-24},
	r64F: {"f64", 8, func(v float64) []byte { return le64(math.Float64bits(v)) },
		func(b []byte) float64 { return math.Float64frombits(ule64(b)) }, 0x1p-53},
	r16F: {"f16", 2, func(v float64) []byte { return le16(dtype.F16FromF32(float32(v))) },
		func(b []byte) float64 { return float64(dtype.F16ToF32(ule16(b))) }, 0x1p-11},
	r16BF: {"bf16", 2, func(v float64) []byte { return le16(dtype.BF16FromF32(float32(v))) },
		func(b []byte) float64 { return float64(dtype.BF16ToF32(ule16(b))) }, 0x1p-8},
}

func le16(v uint16) []byte  { return []byte{byte(v), byte(v >> 8)} }
func le32(v uint32) []byte  { return append(le16(uint16(v)), le16(uint16(v>>16))...) }
func le64(v uint64) []byte  { return append(le32(uint32(v)), le32(uint32(v>>32))...) }
func ule16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func ule32(b []byte) uint32 { return uint32(ule16(b)) | uint32(ule16(b[2:]))<<16 }
func ule64(b []byte) uint64 { return uint64(ule32(b)) | uint64(ule32(b[4:]))<<32 }

// matrix is a column-major matrix of `rows` × `cols` in `batch` copies,
// stored with a leading dimension and a batch stride (in elements).
type matrix struct {
	enc                   encoding
	rows, cols, ld, batch int
	stride                int
	vals                  []float64 // the stored (rounded) values
}

func newMatrix(rng *rand.Rand, enc encoding, rows, cols, batch int) *matrix {
	m := &matrix{enc: enc, rows: rows, cols: cols, ld: rows + 1, batch: batch}
	m.stride = m.ld*cols + 3
	m.vals = make([]float64, m.stride*batch)
	for i := range m.vals {
		m.vals[i] = enc.decode(enc.encode(float64(rng.Intn(2001)-1000) / 256))
	}
	return m
}

func (m *matrix) bytes() []byte {
	var b []byte
	for _, v := range m.vals {
		b = append(b, m.enc.encode(v)...)
	}
	return b
}

func (m *matrix) at(b, i, j int) float64 { return m.vals[b*m.stride+i+j*m.ld] }

func TestGemm(t *testing.T) {
	d := setup(t)
	var h uintptr
	check(t, "cublasCreate_v2", d.BlasCreate(&h))
	rng := rand.New(rand.NewSource(4))
	for _, c := range []struct{ ab, c, compute int }{
		{r32F, r32F, compute32F}, {r32F, r32F, tf32}, {r64F, r64F, compute64F},
		{r16F, r16F, compute32F}, {r16F, r32F, compute32F}, {r16BF, r16BF, compute32F}, {r16BF, r32F, compute32F},
	} {
		for _, ta := range []int32{0, 1} {
			for _, tb := range []int32{0, 1} {
				name := fmt.Sprintf("%s-%s-compute%d-ta%d-tb%d", encodings[c.ab].name, encodings[c.c].name, c.compute, ta, tb)
				t.Run(name, func(t *testing.T) {
					gemmCase(t, setup(t), h, // a subtest runs on another thread: make the context current there
						rng, c.ab, c.c, c.compute, ta, tb)
				})
			}
		}
	}
}

func gemmCase(t *testing.T, d *drv, h uintptr, rng *rand.Rand, ab, ct, compute int, ta, tb int32) {
	const m, n, k, batch = 5, 4, 7, 3
	shape := func(tr int32, r, c int) (int, int) {
		if tr == 1 {
			return c, r
		}
		return r, c
	}
	ar, ac := shape(ta, m, k)
	br, bc := shape(tb, k, n)
	A, B := newMatrix(rng, encodings[ab], ar, ac, batch), newMatrix(rng, encodings[ab], br, bc, batch)
	C := newMatrix(rng, encodings[ct], m, n, batch)
	dA, dB, dC := devBytes(t, d, A.bytes()), devBytes(t, d, B.bytes()), devBytes(t, d, C.bytes())
	alpha, beta := 1.5, -0.5
	a32, b32 := float32(alpha), float32(beta)
	pa, pb := unsafe.Pointer(&a32), unsafe.Pointer(&b32)
	if compute == compute64F {
		pa, pb = unsafe.Pointer(&alpha), unsafe.Pointer(&beta)
	}
	check(t, "cublasGemmStridedBatchedEx", d.GemmStridedBatched(h, ta, tb, m, n, k, pa, dA, int32(ab), int32(A.ld), int64(A.stride),
		dB, int32(ab), int32(B.ld), int64(B.stride), pb, dC, int32(ct), int32(C.ld), int64(C.stride), batch, int32(compute), -1))
	got := download[byte](t, d, dC, len(C.vals)*C.enc.size)
	op := func(x *matrix, tr int32, b, i, j int) float64 {
		if tr == 1 {
			return x.at(b, j, i)
		}
		return x.at(b, i, j)
	}
	for b := 0; b < batch; b++ {
		for j := 0; j < n; j++ {
			for i := 0; i < m; i++ {
				want, mag := beta*C.at(b, i, j), math.Abs(beta*C.at(b, i, j))
				for p := 0; p < k; p++ {
					x := alpha * op(A, ta, b, i, p) * op(B, tb, b, p, j)
					want, mag = want+x, mag+math.Abs(x)
				}
				at := (b*C.stride + i + j*C.ld) * C.enc.size
				g := C.enc.decode(got[at:])
				if math.Abs(g-want) > C.enc.eps*math.Abs(want)+1e-15*mag {
					t.Fatalf("C[batch %d](%d,%d) = %v, want %v", b, i, j, g, want)
				}
			}
		}
	}
	// Padding between columns and batches is left alone.
	if pad := C.enc.decode(got[(C.rows)*C.enc.size:]); pad != C.at(0, C.rows, 0) {
		t.Errorf("GEMM wrote the padding row: %v, want %v", pad, C.at(0, C.rows, 0))
	}
}

func devBytes(t *testing.T, d *drv, b []byte) uintptr {
	p := alloc[byte](t, d, len(b))
	upload(t, d, p, b)
	return p
}

func TestGemmBetaZeroIgnoresC(t *testing.T) {
	d := setup(t)
	var h uintptr
	check(t, "cublasCreate_v2", d.BlasCreate(&h))
	a, b := []float32{1, 2, 3, 4}, []float32{5, 6, 7, 8} // 2×2 column-major
	c := []float32{float32(math.NaN()), float32(math.NaN()), float32(math.NaN()), float32(math.NaN())}
	dA, dB, dC := alloc[float32](t, d, 4), alloc[float32](t, d, 4), alloc[float32](t, d, 4)
	upload(t, d, dA, a)
	upload(t, d, dB, b)
	upload(t, d, dC, c)
	one, zero := float32(1), float32(0)
	before := d.BlasNoWorkspace()
	check(t, "cublasGemmEx", d.GemmEx(h, 0, 0, 2, 2, 2, unsafe.Pointer(&one), dA, r32F, 2, dB, r32F, 2, unsafe.Pointer(&zero), dC, r32F, 2, compute32F, -1))
	got := download[float32](t, d, dC, 4)
	if want := []float32{1*5 + 3*6, 2*5 + 4*6, 1*7 + 3*8, 2*7 + 4*8}; !equal(got, want) {
		t.Errorf("GemmEx with beta 0 over NaN = %v, want %v", got, want)
	}
	if runs := d.BlasNoWorkspace() - before; runs != 1 {
		t.Errorf("GEMMs run without a workspace = %d, want 1", runs)
	}
	ws := alloc[byte](t, d, 1<<20)
	check(t, "cublasSetWorkspace_v2", d.BlasSetWorkspace(h, ws, 1<<20))
	check(t, "cublasGemmEx", d.GemmEx(h, 0, 0, 2, 2, 2, unsafe.Pointer(&one), dA, r32F, 2, dB, r32F, 2, unsafe.Pointer(&zero), dC, r32F, 2, compute32F, -1))
	check(t, "cuCtxSynchronize", d.CtxSynchronize())
	if runs := d.BlasNoWorkspace() - before; runs != 1 {
		t.Errorf("GEMMs run without a workspace after SetWorkspace = %d, want still 1", runs)
	}
	if n, err := theLibs.GemmsWithoutWorkspace(); err != nil || n != d.BlasNoWorkspace() {
		t.Errorf("Libs.GemmsWithoutWorkspace() = %d, %v; want %d", n, err, d.BlasNoWorkspace())
	}
	if r := d.GemmEx(h, 0, 0, 2, 2, 2, unsafe.Pointer(&one), dA, r16F, 2, dB, r32F, 2, unsafe.Pointer(&zero), dC, r32F, 2, compute32F, -1); r != 15 {
		t.Errorf("GemmEx with A f16 and B f32 = %d, want 15 (CUBLAS_STATUS_NOT_SUPPORTED)", r)
	}
	if r := d.GemmEx(h, 0, 0, 2, 2, 2, unsafe.Pointer(&one), dA, r32F, 1, dB, r32F, 2, unsafe.Pointer(&zero), dC, r32F, 2, compute32F, -1); r != 7 {
		t.Errorf("GemmEx with lda 1 < m 2 = %d, want 7 (CUBLAS_STATUS_INVALID_VALUE)", r)
	}
}
