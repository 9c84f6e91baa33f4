package nn_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/safetensors"
)

// mlp is Linear(in, hidden) → ReLU → Linear(hidden, out), params named
// "0.weight", "0.bias", "2.weight", "2.bias" (the second bias optional).
func mlp(dev *device.Device, dt dtype.DType, seed uint64, in, hidden, out int, bias2 bool) *nn.Sequential {
	b := nn.NewBuilder(dev, dt, seed)
	return nn.NewSequential(nn.NewLinear(b, "0", in, hidden, true), nn.ReLU("1"), nn.NewLinear(b, "2", hidden, out, bias2))
}

// snapshot is a model's raw bytes and block versions, by param name.
type snapshot struct {
	data    map[string][]byte
	version map[string]uint64
}

func snap(m nn.Module) snapshot {
	s := snapshot{map[string][]byte{}, map[string]uint64{}}
	for _, p := range m.Params() {
		s.data[p.Name] = bytes.Clone(p.T.Block().Bytes())
		s.version[p.Name] = p.T.Block().Version()
	}
	return s
}

// same reports how two snapshots differ, or "".
func (s snapshot) same(o snapshot) string {
	for n, d := range s.data {
		if !bytes.Equal(d, o.data[n]) {
			return "data of " + n
		}
		if s.version[n] != o.version[n] {
			return "version of " + n
		}
	}
	if len(s.data) != len(o.data) {
		return "param count"
	}
	return ""
}

// Saved and loaded into a model built from another seed, every parameter
// is bit-identical, in each float dtype; the file holds each tensor in the
// model's own dtype; Save and Load allocate no device memory.
func TestSaveLoadBitIdentical(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16, dtype.F64} {
		dev := cpu.New(0, device.Options{})
		src := mlp(dev, dt, 1, 5, 7, 3, true)
		dst := mlp(dev, dt, 2, 5, 7, 3, true)
		path := filepath.Join(t.TempDir(), "m.safetensors")
		if snap(src).same(snap(dst)) == "" {
			t.Fatalf("%v: seeds 1 and 2 gave the same model", dt)
		}
		before := dev.Stats().Requested
		if err := nn.Save(path, src, map[string]string{"epoch": "3"}); err != nil {
			t.Fatal(err)
		}
		meta, err := nn.Load(path, dst)
		if err != nil {
			t.Fatal(err)
		}
		if after := dev.Stats().Requested; after.Allocs != before.Allocs {
			t.Errorf("%v: Save+Load made %d device allocations", dt, after.Allocs-before.Allocs)
		}
		if meta["epoch"] != "3" || len(meta) != 1 {
			t.Errorf("%v: metadata %v", dt, meta)
		}
		s, d := snap(src), snap(dst)
		for n := range s.data {
			if !bytes.Equal(s.data[n], d.data[n]) {
				t.Errorf("%v: %s differs after Load", dt, n)
			}
			if d.version[n] == s.version[n] {
				t.Errorf("%v: %s: block version not bumped by Load", dt, n)
			}
		}
		// The file, read independently: every param in its own dtype and
		// bytes, in the reference writer's order (by name within one dtype).
		f, err := safetensors.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"0.bias", "0.weight", "2.bias", "2.weight"}; !slices.Equal(f.Names, want) {
			t.Errorf("%v: file names %v, want %v", dt, f.Names, want)
		}
		for _, p := range src.Params() {
			ft := f.Tensors[p.Name]
			if ft.DType != dt || !slices.Equal(ft.Shape, p.T.Shape()) || !bytes.Equal(ft.Data, s.data[p.Name]) {
				t.Errorf("%v: file tensor %s = %v %v, want %v %v and the param's bytes", dt, p.Name, ft.Kind, ft.Shape, dt, p.T.Shape())
			}
		}
		nn.Release(src)
		nn.Release(dst)
		if n := dev.CurrentBytes(); n != 0 {
			t.Errorf("%v: %d bytes live after releasing both models", dt, n)
		}
	}
}

// Special values, NaN payloads included, survive bit for bit.
func TestSaveLoadSpecialBits(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	src := mlp(dev, dtype.F16, 1, 2, 2, 1, true)
	w := src.Layers[0].(*nn.Linear).Weight
	// A signalling NaN with a payload, -Inf, the smallest subnormal, -0.
	copy(w.Block().Bytes(), dtype.Bytes([]uint16{0x7c01, 0xfc00, 0x0001, 0x8000}))
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := nn.Save(path, src, nil); err != nil {
		t.Fatal(err)
	}
	dst := mlp(dev, dtype.F16, 2, 2, 2, 1, true)
	if _, err := nn.Load(path, dst); err != nil {
		t.Fatal(err)
	}
	got := dst.Layers[0].(*nn.Linear).Weight.Block().Bytes()
	if !bytes.Equal(got, w.Block().Bytes()) {
		t.Errorf("weight bytes %x, want %x", got, w.Block().Bytes())
	}
	nn.Release(src)
	nn.Release(dst)
}

// Every kind of mismatch is listed in one error, and the model is left as
// it was, values and block versions.
func TestLoadMismatchChangesNothing(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	path := filepath.Join(t.TempDir(), "m.safetensors")
	src := mlp(dev, dtype.F32, 1, 4, 8, 3, true)
	if err := nn.Save(path, src, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		m    *nn.Sequential
		want []string
	}{
		{"wider hidden layer", mlp(dev, dtype.F32, 2, 4, 9, 3, true), []string{
			`3 mismatches`,
			`"0.bias": file has F32 [8] (32 bytes), want F32 [9] (36 bytes)`,
			`"0.weight": file has F32 [8 4] (128 bytes), want F32 [9 4] (144 bytes)`,
			`"2.weight": file has F32 [3 8] (96 bytes), want F32 [3 9] (108 bytes)`}},
		{"no second bias", mlp(dev, dtype.F32, 2, 4, 8, 3, false), []string{`1 mismatch between`, `unexpected "2.bias" (F32 [3])`}},
		{"another dtype", mlp(dev, dtype.F64, 2, 4, 8, 3, true), []string{`4 mismatches`, `"2.bias": file has F32 [3] (12 bytes), want F64 [3] (24 bytes)`}},
		{"an extra layer", nn.NewSequential(append(mlp(dev, dtype.F32, 2, 4, 8, 3, true).Layers,
			nn.NewLinear(nn.NewBuilder(dev, dtype.F32, 3), "3", 3, 2, true))...),
			[]string{`2 mismatches`, `missing "3.bias" (F32 [2])`, `missing "3.weight" (F32 [2 3])`}},
	}
	for _, c := range cases {
		before := snap(c.m)
		_, err := nn.Load(path, c.m)
		if err == nil {
			t.Errorf("%s: Load succeeded", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, w)
			}
		}
		if d := before.same(snap(c.m)); d != "" {
			t.Errorf("%s: model changed: %s", c.name, d)
		}
		t.Logf("%s: %v", c.name, err)
		nn.Release(c.m)
	}
	nn.Release(src)
}

// A truncated or corrupted file gives an error naming the problem and
// changes nothing.
func TestLoadCorruptFile(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	src := mlp(dev, dtype.F32, 1, 4, 8, 3, true)
	if err := nn.Save(good, src, map[string]string{"note": "x"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	hlen := int(b[0]) | int(b[1])<<8
	corrupt := func(old, new string) []byte {
		c := bytes.Replace(b, []byte(old), []byte(new), 1)
		if bytes.Equal(c, b) {
			t.Fatalf("%q not in the file", old)
		}
		return c
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "file of 0 bytes is too short"},
		{"cut in the length", b[:5], "file of 5 bytes is too short"},
		{"cut in the header", b[:8+hlen/2], "runs past the end"},
		{"cut after the header", b[:8+hlen], "run past the 0 bytes that follow the header"},
		{"cut in the data", b[:len(b)-7], "(truncated?)"},
		{"one byte short", b[:len(b)-1], "(truncated?)"},
		{"one byte more", append(bytes.Clone(b), 0), "1 unaccounted for"},
		{"header not JSON", corrupt(`{"__metadata__"`, `["__metadata__"`), "the header is an array"},
		{"unknown dtype", corrupt(`"F32"`, `"F33"`), `unknown dtype "F33"`},
		{"shape changed", corrupt(`"shape":[8]`, `"shape":[9]`), `"0.bias": data_offsets [0, 32] span 32 bytes, but shape [9] of F32 needs 36`},
		{"offset changed", corrupt(`[0,32]`, `[0,31]`), `"0.bias": data_offsets [0, 31] span 31 bytes`},
	}
	for _, c := range cases {
		path := filepath.Join(dir, "bad.safetensors")
		if err := os.WriteFile(path, c.b, 0o644); err != nil {
			t.Fatal(err)
		}
		dst := mlp(dev, dtype.F32, 2, 4, 8, 3, true)
		before := snap(dst)
		_, err := nn.Load(path, dst)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: Load error %v, want one naming %s and containing %q", c.name, err, path, c.want)
		}
		if d := before.same(snap(dst)); d != "" {
			t.Errorf("%s: model changed: %s", c.name, d)
		}
		t.Logf("%s: %v", c.name, err)
		nn.Release(dst)
	}
	if _, err := nn.Load(filepath.Join(dir, "absent"), src); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(absent) = %v, want fs.ErrNotExist", err)
	}
	nn.Release(src)
}

// A byte flipped in a tensor's data fails Load with a checksum error
// naming the file and the tensor, and the model is left as it was; the
// same file without checksums, as Python writes it, loads unverified.
// (TestChecksumsCatchEveryByteChange in safetensors and
// TestLoadSnapshotFlippedBytes in train flip every byte of a file.)
func TestLoadFlippedByte(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	src := mlp(dev, dtype.F32, 1, 4, 8, 3, true)
	defer nn.Release(src)
	if err := nn.Save(good, src, map[string]string{"note": "x"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	f, err := safetensors.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	last := f.Names[len(f.Names)-1] // the tensor whose data ends the file
	c := bytes.Clone(b)             // f's tensors point into b
	c[len(c)-2] ^= 0x10
	path := filepath.Join(dir, "flipped.safetensors")
	if err := os.WriteFile(path, c, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := mlp(dev, dtype.F32, 2, 4, 8, 3, true)
	defer nn.Release(dst)
	before := snap(dst)
	_, err = nn.Load(path, dst)
	var ce *safetensors.ChecksumError
	if !errors.As(err, &ce) || ce.Tensor != last || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("tensor %q", last)) {
		t.Errorf("Load of a flipped byte in %q: %v, want a checksum error naming %s and the tensor", last, err, path)
	}
	if d := before.same(snap(dst)); d != "" {
		t.Errorf("a failed Load changed the model: %s", d)
	}
	t.Logf("%v", err)
	f.Checksums = nil
	if err := safetensors.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	if _, err := nn.Load(path, dst); err != nil {
		t.Fatalf("a file without checksums: Load error %v", err)
	}
	for n, d := range snap(src).data {
		if !bytes.Equal(snap(dst).data[n], d) {
			t.Errorf("a file without checksums: %s differs after Load", n)
		}
	}
}

// badModule lists params with the names it is given.
type badModule []nn.Param

func (m badModule) Params() []nn.Param { return m }
func (badModule) Train(bool)           {}

// A save that fails leaves the previous file readable and identical, and
// no temporary file behind.
func TestSaveFailureKeepsOldFile(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	m := mlp(dev, dtype.F32, 1, 4, 8, 3, true)
	if err := nn.Save(path, m, nil); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)

	released := mlp(dev, dtype.F32, 2, 4, 8, 3, true)
	released.Layers[2].(*nn.Linear).Bias.Release()
	x := autograd.Zeros(dev, dtype.F32, 2)
	y := autograd.Zeros(dev, dtype.F32, 2)
	metaDev := meta.New(0, device.Options{})
	onMeta := mlp(metaDev, dtype.F32, 1, 4, 8, 3, true)
	fails := []struct {
		name string
		m    nn.Module
		meta map[string]string
		want string
	}{
		{"released param", released, nil, `nn.Save ` + path + `: tensor "2.bias": released (Tensor([3], f32, cpu:0, 2.bias, requires_grad, released))`},
		{"bad metadata", m, map[string]string{"k": "\xff"}, "not valid UTF-8"},
		{"duplicate names", badModule{{Name: "w", T: x}, {Name: "w", T: y}}, nil, `two params are named "w"`},
		{"no name", badModule{{Name: "", T: x}}, nil, "has no name"},
		{"meta device", onMeta, nil, `is on device meta:0, which holds no values`},
	}
	for _, c := range fails {
		err := nn.Save(path, c.m, c.meta)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Save error %v, want one containing %q", c.name, err, c.want)
		}
		t.Logf("%s: %v", c.name, err)
		if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
			t.Errorf("%s: the old file changed", c.name)
		}
	}
	if err := nn.Save(dir, m, nil); err == nil {
		t.Errorf("Save over a directory succeeded")
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 1 {
		t.Errorf("directory holds %d entries, want the file only", len(es))
	}
	if _, err := nn.Load(path, m); err != nil {
		t.Errorf("old file no longer loads: %v", err)
	}
	for _, r := range []nn.Module{m, released, onMeta} {
		nn.Release(r)
	}
	x.Release()
	y.Release()
}

// A model and other tensors (optimizer state, a step counter) in one file,
// restored part by part or all at once; integer values beyond 2^53 and
// strided views come back exactly.
func TestWriteReadAssignTensors(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	path := filepath.Join(t.TempDir(), "state.safetensors")
	m := mlp(dev, dtype.F32, 1, 4, 8, 3, true)
	all, err := nn.StateTensors(m, "model.")
	if err != nil {
		t.Fatal(err)
	}
	step := autograd.FromInt64s(dev, []int{2}, []int64{math.MaxInt64 - 1, -1 << 60})
	big := autograd.FromFloat32s(dev, []int{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	rows, cols := big.Slice(0, 1, 3), big.Transpose(0, 1) // an offset view and a strided one
	all["optim.step"], all["optim.rows"], all["optim.cols"] = step, rows, cols
	if err := nn.WriteTensors(path, all, map[string]string{"step": "12"}); err != nil {
		t.Fatal(err)
	}
	f, err := nn.ReadTensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["step"] != "12" || len(f.Names) != 7 {
		t.Fatalf("file: %v %v", f.Names, f.Metadata)
	}

	m2 := mlp(dev, dtype.F32, 2, 4, 8, 3, true)
	model2, _ := nn.StateTensors(m2, "")
	step2 := autograd.New(dev, dtype.I64, device.Optimizer, 2)
	big2 := autograd.Zeros(dev, dtype.F32, 3, 2)
	other := autograd.Zeros(dev, dtype.F32, 3, 2)
	opt2 := map[string]*autograd.Tensor{"step": step2, "rows": big2.Slice(0, 1, 3), "cols": other.Transpose(0, 1)}

	// A wrong part fails its check before anything is written.
	wrong := map[string]*autograd.Tensor{"step": step2, "rows": autograd.Zeros(dev, dtype.F32, 2, 3)}
	err = nn.CheckTensors(wrong, f, "optim.")
	for _, w := range []string{`"optim.rows": file has F32 [2 2] (16 bytes), want F32 [2 3] (24 bytes)`, `unexpected "optim.cols"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("CheckTensors(wrong) = %v, want it to contain %q", err, w)
		}
	}
	if err := nn.AssignTensors(wrong, f, "optim."); err == nil || !slices.Equal(step2.Int64s(), []int64{0, 0}) {
		t.Errorf("AssignTensors(wrong) = %v and step %v, want an error and nothing written", err, step2.Int64s())
	}
	wrong["rows"].Release()

	for _, part := range []struct {
		ts     map[string]*autograd.Tensor
		prefix string
	}{{model2, "model."}, {opt2, "optim."}} {
		if err := nn.CheckTensors(part.ts, f, part.prefix); err != nil {
			t.Fatal(err)
		}
	}
	if err := nn.AssignTensors(model2, f, "model."); err != nil {
		t.Fatal(err)
	}
	if err := nn.AssignTensors(opt2, f, "optim."); err != nil {
		t.Fatal(err)
	}
	for n, d := range snap(m).data {
		if !bytes.Equal(d, snap(m2).data[n]) {
			t.Errorf("model part: %s differs", n)
		}
	}
	if got := step2.Int64s(); !slices.Equal(got, []int64{math.MaxInt64 - 1, -1 << 60}) {
		t.Errorf("step = %v", got)
	}
	if got := big2.Float32s(); !slices.Equal(got, []float32{0, 0, 3, 4, 5, 6}) {
		t.Errorf("big2 after assigning its rows view = %v", got)
	}
	if got := other.Float32s(); !slices.Equal(got, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("other after assigning its transposed view = %v", got)
	}
	// With prefix "", one map of everything restores all or nothing.
	if err := nn.AssignTensors(all, f, ""); err != nil {
		t.Errorf("AssignTensors(all) = %v", err)
	}
	delete(all, "optim.step")
	if err := nn.AssignTensors(all, f, ""); err == nil || !strings.Contains(err.Error(), `unexpected "optim.step" (I64 [2])`) {
		t.Errorf("AssignTensors(all less one) = %v", err)
	}
	for _, x := range opt2 {
		x.Release()
	}
	for _, x := range []*autograd.Tensor{step, big, rows, cols, big2, other} {
		x.Release()
	}
	nn.Release(m)
	nn.Release(m2)
	if n := dev.CurrentBytes(); n != 0 {
		t.Errorf("%d bytes live at the end: %v", n, dev.Live())
	}
}

// Save a model, load it into another built from a different seed.
func ExampleSave() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")

	dev := cpu.New(0, device.Options{})
	build := func(seed uint64) *nn.Sequential {
		b := nn.NewBuilder(dev, dtype.F32, seed)
		return nn.NewSequential(nn.NewLinear(b, "fc1", 2, 3, true), nn.ReLU("relu"), nn.NewLinear(b, "fc2", 3, 1, true))
	}
	a, b := build(1), build(2)
	w := func(m *nn.Sequential) float32 { return m.Layers[2].(*nn.Linear).Weight.Float32s()[0] }
	fmt.Println("before:", w(a) == w(b))

	if err := nn.Save(path, a, map[string]string{"epoch": "5"}); err != nil {
		panic(err)
	}
	meta, err := nn.Load(path, b)
	if err != nil {
		panic(err)
	}
	fmt.Println("after:", w(a) == w(b), meta)

	f, _ := safetensors.ReadFile(path)
	fmt.Println(f.Names)
	nn.Release(a)
	nn.Release(b)
	// Output:
	// before: false
	// after: true map[epoch:5]
	// [fc1.bias fc1.weight fc2.bias fc2.weight]
}
