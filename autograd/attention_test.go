package autograd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/autograd/autogradtest"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
)

func TestGradAttention(t *testing.T) {
	sdpa := func(causal bool) func(*autograd.Scope, []*autograd.Tensor) *autograd.Tensor {
		return func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.ScaledDotProductAttention(in[0], in[1], in[2], causal)
		}
	}
	qkv := func(sh ...int) [][]int { return [][]int{sh, sh, sh} }
	runGradCases(t, []gradCase{
		{name: "full", shapes: qkv(1, 2, 5, 4), f: sdpa(false)},
		{name: "causal", shapes: qkv(1, 2, 5, 4), f: sdpa(true)},
		{name: "t1", shapes: qkv(2, 1, 1, 3), f: sdpa(false)},
		{name: "t1_causal", shapes: qkv(1, 1, 1, 2), f: sdpa(true)},
		{name: "d_odd", shapes: qkv(2, 2, 3, 3), f: sdpa(false)},
		{name: "d_odd_causal", shapes: qkv(2, 1, 4, 5), f: sdpa(true)},
		{name: "d1", shapes: qkv(1, 1, 4, 1), f: sdpa(true)},
		{name: "permuted_inputs", shapes: qkv(1, 3, 2, 2), f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			// (B, T, H, D) projections viewed as (B, H, T, D): copied to contiguous
			p := func(x *autograd.Tensor) *autograd.Tensor { return x.Permute(0, 2, 1, 3) }
			return autograd.ScaledDotProductAttention(p(in[0]), p(in[1]), p(in[2]), true)
		}},
		{name: "shared_qkv", shapes: [][]int{{1, 1, 3, 2}}, f: func(_ *autograd.Scope, in []*autograd.Tensor) *autograd.Tensor {
			return autograd.ScaledDotProductAttention(in[0], in[0], in[0], false)
		}},
	})
}

// attnRef computes attention from its definition in float64, one
// (batch, head) at a time with the whole T×T probability matrix:
// out = P·V with P = softmax(scale·Q·Kᵀ + mask) row by row. With dout it
// also returns the gradients from the analytic formulas dV = Pᵀ·dO,
// dP = dO·Vᵀ, dS = P∘(dP − rowsum(P∘dP)), dQ = scale·dS·K and
// dK = scale·dSᵀ·Q (nil without dout).
func attnRef(q, k, v, dout []float64, b, h, t, d int, causal bool) (out, dq, dk, dv []float64) {
	out = make([]float64, len(q))
	if dout != nil {
		dq, dk, dv = make([]float64, len(q)), make([]float64, len(q)), make([]float64, len(q))
	}
	scale := 1 / math.Sqrt(float64(d))
	dot := func(a, b []float64) (s float64) {
		for x := range a {
			s += a[x] * b[x]
		}
		return s
	}
	for bh := range b * h {
		row := func(m []float64, i int) []float64 { return m[bh*t*d+i*d:][:d] }
		p := make([][]float64, t)
		for i := range t {
			p[i] = make([]float64, t)
			mx := math.Inf(-1)
			for j := range t {
				p[i][j] = math.Inf(-1) // the mask
				if !causal || j <= i {
					p[i][j] = scale * dot(row(q, i), row(k, j))
				}
				mx = math.Max(mx, p[i][j])
			}
			var sum float64
			for j := range t {
				p[i][j] = math.Exp(p[i][j] - mx)
				sum += p[i][j]
			}
			for j := range t {
				p[i][j] /= sum
				for x, vj := range row(v, j) {
					row(out, i)[x] += p[i][j] * vj
				}
			}
		}
		if dout == nil {
			continue
		}
		for i := range t {
			dp := make([]float64, t)
			var rs float64
			for j := range t {
				dp[j] = dot(row(dout, i), row(v, j))
				rs += p[i][j] * dp[j]
			}
			for j := range t {
				ds := p[i][j] * (dp[j] - rs)
				for x := range d {
					row(dv, j)[x] += p[i][j] * row(dout, i)[x]
					row(dq, i)[x] += scale * ds * row(k, j)[x]
					row(dk, j)[x] += scale * ds * row(q, i)[x]
				}
			}
		}
	}
	return out, dq, dk, dv
}

func TestAttentionForward(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sh := range [][4]int{{1, 1, 1, 1}, {2, 3, 7, 5}, {1, 2, 67, 8}, {1, 1, 130, 3}} {
		for _, causal := range []bool{false, true} {
			b, h, tt, d := sh[0], sh[1], sh[2], sh[3]
			name := fmt.Sprintf("%v/causal=%v", sh, causal)
			n := b * h * tt * d
			data := make([][]float64, 3)
			for i := range data {
				data[i] = make([]float64, n)
				for j := range data[i] {
					data[i][j] = 2 * rng.NormFloat64()
				}
			}
			want, _, _, _ := attnRef(data[0], data[1], data[2], nil, b, h, tt, d, causal)
			s := autograd.NewScope()
			in := make([]*autograd.Tensor, 3)
			for i := range in {
				in[i] = s.FromFloat64s(dev, sh[:], data[i])
			}
			y := autograd.ScaledDotProductAttention(in[0], in[1], in[2], causal)
			if diff := autogradtest.MaxDiff(y.Float64s(), want); diff > 1e-12 {
				t.Errorf("%s: F64 differs from the naive reference by %g", name, diff)
			}
			// F32 and BF16 (computed in F32, stored in 2 bytes) against F64
			for _, c := range []struct {
				dt  dtype.DType
				tol float64
			}{{dtype.F32, 1e-5}, {dtype.BF16, 0.1}, {dtype.F16, 2e-2}} {
				lo := make([]*autograd.Tensor, 3)
				for i := range lo {
					lo[i] = in[i].Cast(c.dt)
				}
				yl := autograd.ScaledDotProductAttention(lo[0], lo[1], lo[2], causal)
				if yl.DType() != c.dt {
					t.Errorf("%s: %s output has dtype %s", name, c.dt, yl.DType())
				}
				if diff := autogradtest.MaxDiff(yl.Float64s(), want); diff > c.tol {
					t.Errorf("%s: %s differs from F64 by %g (tolerance %g)", name, c.dt, diff, c.tol)
				}
			}
			s.Release()
		}
	}
	if n := dev.LiveBlocks(); n != 0 {
		t.Errorf("leak: %v", dev.Live())
	}
}

// TestAttentionGradF64 checks F64 attention's output and gradients
// against attnRef to 1e-12 of their largest magnitude, with scores of
// order one and scaled ×100 (q·100: nearly one-hot rows whose log-sum-exp
// is large, so that a log-sum-exp rounded to F32 — a relative 6e-8 of it —
// shows in every probability backward recomputes), over tile boundaries
// (T = 70 > 64), causal or not.
func TestAttentionGradF64(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	const b, h, tt, d = 1, 2, 70, 8
	shape := []int{b, h, tt, d}
	n := b * h * tt * d
	for _, qscale := range []float64{1, 100} {
		for _, causal := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(11, uint64(qscale)))
			data := make([][]float64, 4) // q, k, v, dout
			for i := range data {
				data[i] = make([]float64, n)
				for j := range data[i] {
					data[i][j] = rng.NormFloat64()
				}
			}
			for j := range data[0] {
				data[0][j] *= qscale
			}
			out, dq, dk, dv := attnRef(data[0], data[1], data[2], data[3], b, h, tt, d, causal)
			want := [][]float64{out, dq, dk, dv}

			s := autograd.NewScope()
			var leaves []*autograd.Tensor
			for i := range 3 {
				leaves = append(leaves, s.FromFloat64s(dev, shape, data[i]).SetRequiresGrad(true))
			}
			y := autograd.ScaledDotProductAttention(leaves[0], leaves[1], leaves[2], causal)
			if err := y.BackwardWith(s.FromFloat64s(dev, shape, data[3])); err != nil {
				t.Fatal(err)
			}
			got := [][]float64{y.Float64s(), leaves[0].Grad().Float64s(), leaves[1].Grad().Float64s(), leaves[2].Grad().Float64s()}
			for i, what := range []string{"out", "dq", "dk", "dv"} {
				tol := 1e-12 * autogradtest.MaxAbs(want[i])
				if diff := autogradtest.MaxDiff(got[i], want[i]); !(diff <= tol) {
					t.Errorf("q×%g causal=%v: %s differs from the float64 reference by %.3g (tolerance %.3g)", qscale, causal, what, diff, tol)
				}
			}
			for _, x := range leaves {
				x.ZeroGrad()
			}
			s.Release()
		}
	}
}

// TestAttentionGradF32 compares F32 and BF16 gradients with F64's.
func TestAttentionGradF32(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	shape := []int{2, 2, 9, 5}
	n := 2 * 2 * 9 * 5
	grads := func(dt dtype.DType) [][]float64 {
		rng := rand.New(rand.NewPCG(7, 8))
		s := autograd.NewScope()
		defer s.Release()
		var leaves []*autograd.Tensor
		for range 3 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rng.NormFloat64()
			}
			x := s.FromFloat64s(dev, shape, v).Cast(dt)
			x.SetRequiresGrad(true)
			leaves = append(leaves, x)
		}
		y := autograd.ScaledDotProductAttention(leaves[0], leaves[1], leaves[2], true)
		w := make([]float64, n)
		for i := range w {
			w[i] = math.Sin(float64(i))
		}
		if err := y.Mul(s.FromFloat64s(dev, shape, w).Cast(dt)).Sum(false).Backward(); err != nil {
			t.Fatal(err)
		}
		var g [][]float64
		for _, x := range leaves {
			g = append(g, x.Grad().Float64s())
			x.ZeroGrad()
		}
		return g
	}
	ref := grads(dtype.F64)
	for _, c := range []struct {
		dt  dtype.DType
		tol float64
	}{{dtype.F32, 1e-5}, {dtype.BF16, 0.1}} {
		got := grads(c.dt)
		for i, name := range []string{"dq", "dk", "dv"} {
			if diff := autogradtest.MaxDiff(got[i], ref[i]); diff > c.tol {
				t.Errorf("%s %s differs from F64 by %g (tolerance %g)", c.dt, name, diff, c.tol)
			}
		}
	}
}

// TestAttentionMemory checks the op's bytes in closed form: out
// (B·H·T·D·size) and lse (B·H·T·cs, cs = 4, or 8 for F64) beyond the
// inputs, nothing T×T, for F32, F64 and BF16.
func TestAttentionMemory(t *testing.T) {
	for _, c := range []struct {
		dt       dtype.DType
		size, cs int64
	}{{dtype.F32, 4, 4}, {dtype.F64, 8, 8}, {dtype.BF16, 2, 4}} {
		t.Run(c.dt.String(), func(t *testing.T) { attentionMemory(t, c.dt, c.size, c.cs) })
	}
}

func attentionMemory(t *testing.T, dt dtype.DType, size, cs int64) {
	const b, h, tt, d = 2, 3, 16, 8
	run := func(dev *device.Device) {
		q := autograd.Param(dev, dt, "q", b, h, tt, d)
		k := autograd.Param(dev, dt, "k", b, h, tt, d)
		v := autograd.Param(dev, dt, "v", b, h, tt, d)
		s := autograd.NewScope()
		qs, ks, vs := s.Use(q), s.Use(k), s.Use(v)
		out, lse := int64(b*h*tt*d)*size, int64(b*h*tt)*cs
		y := autograd.ScaledDotProductAttention(qs, ks, vs, true)
		st := dev.Stats()
		// beyond its inputs (parameters here): out and lse, nothing T×T
		if got := st.ByTag[device.Activation].Current; got != out+lse {
			t.Errorf("%s: activations after forward = %d, want out %d + lse %d", dev, got, out, lse)
		}
		if got := st.ByTag[device.Activation].Peak; got != out+lse {
			t.Errorf("%s: activation peak in forward = %d, want %d", dev, got, out+lse)
		}
		if got := st.ByTag[device.Workspace].Peak; got != 0 {
			t.Errorf("%s: forward used %d workspace bytes", dev, got)
		}
		loss := y.Sum(false)
		y.Release()
		if got := dev.Stats().ByTag[device.Activation].Current; got != out+lse+size {
			t.Errorf("%s: graph holds %d activation bytes, want out + lse + loss = %d", dev, got, out+lse+size)
		}
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		if got := dev.Stats().ByTag[device.Activation].Current; got != size {
			t.Errorf("%s: %d activation bytes after backward, want %d (the loss)", dev, got, size)
		}
		if got := dev.Stats().ByTag[device.Gradient].Current; got != 3*out {
			t.Errorf("%s: gradient bytes %d, want %d", dev, got, 3*out)
		}
		s.Release()

		// Without grad, lse is freed at once: only the output remains.
		s.NoGrad(func() {
			y := autograd.ScaledDotProductAttention(s.Use(q), s.Use(k), s.Use(v), false)
			if got := dev.Stats().ByTag[device.Activation].Current; got != out {
				t.Errorf("%s: no-grad activations = %d, want out %d", dev, got, out)
			}
			y.Release()
		})
		s.Release()
		for _, p := range []*autograd.Tensor{q, k, v} {
			p.Release()
		}
	}
	iaStatsEqual(t, "attention", run)
}

func TestAttentionBadInput(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	s := autograd.NewScope()
	defer s.Release()
	q := s.Zeros(dev, dtype.F32, 1, 2, 3, 4)
	const name = "scaled_dot_product_attention"
	iaWantError(t, "shape", func() { autograd.ScaledDotProductAttention(q, s.Zeros(dev, dtype.F32, 1, 2, 5, 4), q, false) },
		name, "[1 2 3 4]", "[1 2 5 4]", "(B, H, T, D)")
	iaWantError(t, "rank", func() { x := s.Zeros(dev, dtype.F32, 3, 4); autograd.ScaledDotProductAttention(x, x, x, true) },
		name, "[3 4]")
	iaWantError(t, "dtype", func() { autograd.ScaledDotProductAttention(q, q.Cast(dtype.F64), q, false) },
		name, "f32", "f64")
	iaWantError(t, "d0", func() { x := s.Zeros(dev, dtype.F32, 1, 1, 2, 0); autograd.ScaledDotProductAttention(x, x, x, false) },
		name, "D is 0")
}
