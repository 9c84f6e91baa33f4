package kernels

import "math"

// Optimizer updates, elementwise over contiguous slices of one length. Each
// element is computed in float64 and rounded once to T, so the F32 and F64
// results differ only by that rounding; elements are independent, so the
// result does not depend on how the loop is split across cores. AdamUpdate
// and SGDUpdate on float32 run the same float64 arithmetic in assembly
// (AVX-512: 8 elements per ZMM; AVX2: 4 per YMM), operation for
// operation, so every path gives the same bits (a NaN's payload aside).

// optimGrain is the number of elements one worker takes at least.
const optimGrain = 1 << 14

// AdamUpdateArgs are the hyperparameters of one AdamUpdate (PyTorch's Adam
// and AdamW; Step is 1 for the first update).
type AdamUpdateArgs struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	Step                               int
	Decoupled                          bool
}

// AdamUpdate applies one Adam (or, Decoupled, AdamW) update to p in place,
// updating the moments m and v; g is read only. With t = a.Step, λ =
// a.WeightDecay, per element:
//
//	Adam:  g' = g + λ·p          AdamW: p = p·(1 − lr·λ), g' = g
//	m = β1·m + (1−β1)·g'
//	v = β2·v + (1−β2)·g'²
//	p = p − (lr/(1−β1^t))·m / (√v/√(1−β2^t) + eps)
func AdamUpdate[T Float](p, g, m, v []T, a AdamUpdateArgs) {
	n := len(p)
	g, m, v = g[:n], m[:n], v[:n]
	t := float64(a.Step)
	c := &adamScalars{b1: a.Beta1, c1: 1 - a.Beta1, b2: a.Beta2, c2: 1 - a.Beta2,
		bc2: math.Sqrt(1 - math.Pow(a.Beta2, t)), eps: a.Eps,
		stepSize: a.LR / (1 - math.Pow(a.Beta1, t)), decay: 1}
	if a.Decoupled {
		c.decay = 1 - a.LR*a.WeightDecay
	} else {
		c.coupled = a.WeightDecay
	}
	ParallelFor(n, optimGrain, func(lo, hi int) {
		adamUpdatePart(p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], c)
	})
}

// adamScalars are AdamUpdate's per-call scalars, laid out for the
// assembly: decay is 1 − lr·λ for AdamW (else 1), coupled is λ for Adam
// (else 0), c1 and c2 are 1−β1 and 1−β2, bc2 is √(1−β2^t) and stepSize
// lr/(1−β1^t).
type adamScalars struct {
	decay, coupled, b1, c1, b2, c2, bc2, eps, stepSize float64
}

// adamUpdatePart updates one worker's run: float32 runs go to the assembly
// while whole vectors remain, the rest (and every run without it) to
// adamUpdateRun, which computes the same bits.
func adamUpdatePart[T Float](p, g, m, v []T, c *adamScalars) {
	k := 0
	if p32, ok := f32s(p); ok {
		g32, _ := f32s(g)
		m32, _ := f32s(m)
		v32, _ := f32s(v)
		switch {
		case CPU.AVX512 && len(p) >= 16:
			k = len(p) &^ 15
			adamF32AVX512(&p32[0], &g32[0], &m32[0], &v32[0], k, c)
		case CPU.AVX2FMA && len(p) >= 8:
			k = len(p) &^ 7
			adamF32AVX2(&p32[0], &g32[0], &m32[0], &v32[0], k, c)
		}
	}
	adamUpdateRun(p[k:], g[k:], m[k:], v[k:], c)
}

// adamUpdateRun is the update of AdamUpdate's doc, element by element in
// float64, each operation rounded (the conversions forbid fused
// multiply-adds), in the order the assembly follows.
func adamUpdateRun[T Float](p, g, m, v []T, c *adamScalars) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		pi := float64(p[i]) * c.decay
		gi := float64(g[i]) + float64(c.coupled*pi)
		mi := float64(c.b1*float64(m[i])) + float64(c.c1*gi)
		vi := float64(c.b2*float64(v[i])) + float64(float64(c.c2*gi)*gi)
		den := float64(math.Sqrt(vi)/c.bc2) + c.eps
		m[i], v[i] = T(mi), T(vi)
		p[i] = T(pi - float64(c.stepSize*mi)/den)
	}
}

// SGDUpdateArgs are the hyperparameters of one SGDUpdate (PyTorch's SGD).
type SGDUpdateArgs struct {
	LR, Momentum, Dampening, WeightDecay float64
	Nesterov                             bool
	// First: buf has no history yet and is set to g' undampened.
	First bool
}

// SGDUpdate applies one SGD update to p in place; g is read only, buf (the
// momentum buffer, nil when Momentum is 0) is updated. With μ, τ, λ the
// momentum, dampening and weight decay, per element:
//
//	g' = g + λ·p
//	buf = g' (First) or μ·buf + (1−τ)·g'
//	d = g' (μ = 0), g' + μ·buf (Nesterov) or buf
//	p = p − lr·d
func SGDUpdate[T Float](p, g, buf []T, a SGDUpdateArgs) {
	n := len(p)
	g = g[:n]
	c := &sgdScalars{lr: a.LR, wd: a.WeightDecay, mu: a.Momentum, c: 1 - a.Dampening, first: 1}
	if a.Momentum != 0 {
		buf = buf[:n]
		c.hasBuf = 1
		if !a.First {
			c.first = 0
		}
		if a.Nesterov {
			c.nesterov = 1
		}
	}
	ParallelFor(n, optimGrain, func(lo, hi int) {
		var b []T
		if c.hasBuf != 0 {
			b = buf[lo:hi]
		}
		sgdUpdatePart(p[lo:hi], g[lo:hi], b, c)
	})
}

// sgdScalars are SGDUpdate's per-call scalars, laid out for the assembly:
// c is 1 − dampening; the flags are 0 or 1. Without momentum first is 1,
// nesterov and hasBuf 0, which is plain SGD.
type sgdScalars struct {
	lr, wd, mu, c           float64
	first, nesterov, hasBuf int64
}

// sgdUpdatePart updates one worker's run as adamUpdatePart does.
func sgdUpdatePart[T Float](p, g, buf []T, c *sgdScalars) {
	k := 0
	if p32, ok := f32s(p); ok {
		g32, _ := f32s(g)
		var b *float32
		if b32, _ := f32s(buf); len(b32) > 0 {
			b = &b32[0]
		}
		switch {
		case CPU.AVX512 && len(p) >= 8:
			k = len(p) &^ 7
			sgdF32AVX512(&p32[0], &g32[0], b, k, c)
		case CPU.AVX2FMA && len(p) >= 4:
			k = len(p) &^ 3
			sgdF32AVX2(&p32[0], &g32[0], b, k, c)
		}
	}
	if buf != nil {
		buf = buf[k:]
	}
	sgdUpdateRun(p[k:], g[k:], buf, c)
}

// sgdUpdateRun is the update of SGDUpdate's doc, element by element in
// float64, each operation rounded, in the order the assembly follows.
func sgdUpdateRun[T Float](p, g, buf []T, c *sgdScalars) {
	g = g[:len(p)]
	for i := range p {
		pi := float64(p[i])
		gi := float64(g[i]) + float64(c.wd*pi)
		b := gi
		if c.first == 0 {
			b = float64(c.mu*float64(buf[i])) + float64(c.c*gi)
		}
		if c.hasBuf != 0 {
			buf[i] = T(b)
		}
		if c.nesterov != 0 {
			b = gi + float64(c.mu*b)
		}
		p[i] = T(pi - float64(c.lr*b))
	}
}

// sumSquaresChunk is the fixed block of elements whose squares are summed
// together; the block sums are then added in order, so the result is the
// same on any number of cores.
const sumSquaresChunk = 1 << 12

// SumSquares returns Σ x², accumulated in float64 in a fixed order (blocks
// of 4096 elements, each summed in four interleaved lanes, then the block
// sums in order).
func SumSquares[T Float](x []T) float64 {
	n := len(x)
	blocks := (n + sumSquaresChunk - 1) / sumSquaresChunk
	if blocks <= 1 {
		return sumSquaresBlock(x)
	}
	part := make([]float64, blocks)
	ParallelFor(blocks, max(optimGrain/sumSquaresChunk, 1), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			part[b] = sumSquaresBlock(x[b*sumSquaresChunk : min((b+1)*sumSquaresChunk, n)])
		}
	})
	var s float64
	for _, p := range part {
		s += p
	}
	return s
}

func sumSquaresBlock[T Float](x []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		a := float64(x[i])
		s0 += a * a
	}
	return (s0 + s1) + (s2 + s3)
}
