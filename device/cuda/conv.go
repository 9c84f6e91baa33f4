package cuda

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// The convolutions loop over samples and groups, each step one
// conv_im2col_T (kernels/conv.cu) into the workspace and one cuBLAS GEMM
// (pointwise convolutions GEMM on x or dx directly). 16-bit operands use
// cuBLAS's 16-bit GEMM with F32 accumulation, so the workspace holds
// elements of the operands' dtype: autograd passes a workspace of the
// compute dtype (F32 for F16 and BF16), whose bytes are reused as twice as
// many 16-bit elements. The 16-bit weight gradient puts its F32 sum over
// the samples in the other half (accRows): cuBLAS's GEMM with 16-bit
// inputs and an F32 output adds each sample in F32, and one cast writes dw.

// convCheck checks the operands' dtypes, lengths and contiguity and
// returns the dtype and the workspace as elements of it (nil Block when
// the convolution needs none).
func (k *kern) convCheck(op string, p device.Conv2d, ws device.Operand, os ...device.Operand) (dtype.DType, device.Operand) {
	dt := k.sameFloat(op, os...)
	k.convShape(op, p, os...)
	n := p.Workspace()
	if n == 0 {
		return dt, device.Operand{DType: dt}
	}
	if ws.Nil() || !ws.Contiguous() || !ws.DType.IsFloat() || ws.Len()*ws.DType.Size() < n*dt.Size() ||
		ws.Off*ws.DType.Size()%dt.Size() != 0 {
		k.bad(op, "workspace of dtype %s shape %v: want %d contiguous elements of %s (or of its compute dtype)", ws.DType, ws.Shape, n, dt)
	}
	return dt, device.Operand{Block: ws.Block, Off: ws.Off * ws.DType.Size() / dt.Size(), DType: dt, Shape: []int{n}}
}

// convShape checks p and that os, the output-side, input-side and weight
// operands, are contiguous with their lengths under p.
func (k *kern) convShape(op string, p device.Conv2d, os ...device.Operand) {
	g := max(p.Groups, 1)
	if p.Groups < 1 || p.C%g != 0 || p.K%g != 0 || p.StrideH < 1 || p.StrideW < 1 || p.DilH < 1 || p.DilW < 1 ||
		p.N < 0 || p.OH < 0 || p.OW < 0 {
		k.bad(op, "convolution %+v: want groups dividing C and K, strides and dilations ≥ 1", p)
	}
	want := []int{p.N * p.K * p.OH * p.OW, p.N * p.C * p.H * p.W, p.K * p.C / g * p.R * p.S}
	for i, o := range os {
		if o.Nil() || !o.Contiguous() {
			k.bad(op, "operand %d of shape %v strides %v: want a contiguous operand", i, o.Shape, o.Strides)
		}
		if o.Len() != want[i] {
			k.bad(op, "operand %d of shape %v: want %d elements for %+v", i, o.Shape, want[i], p)
		}
	}
}

// at is o moved on by off elements.
func at(o device.Operand, off int) device.Operand {
	o.Off += off
	o.Shape, o.Strides = nil, nil
	return o
}

// convArgs are conv_im2col_T's and conv_col2im_T's shape parameters.
func convArgs(p device.Conv2d) []Arg {
	cg := p.C / p.Groups
	return []Arg{I64(int64(cg)), I64(int64(p.H)), I64(int64(p.W)), I64(int64(p.R)), I64(int64(p.S)),
		I64(int64(p.StrideH)), I64(int64(p.StrideW)), I64(int64(p.PadH)), I64(int64(p.PadW)),
		I64(int64(p.DilH)), I64(int64(p.DilW)), I64(int64(p.OH)), I64(int64(p.OW))}
}

// im2col queues conv_im2col_T of sample n, group gi of x into col.
func (k *kern) im2col(p device.Conv2d, col, x device.Operand, n, gi int) {
	cg := p.C / p.Groups
	src := at(x, (n*p.C+gi*cg)*p.H*p.W)
	k.launch("conv_im2col_"+Suffix(col.DType), Linear(p.Workspace()), append([]Arg{k.Ptr(col), k.Ptr(src)}, convArgs(p)...)...)
}

// Conv2d: y[n, group g] (Kg, P) = w[g] (Kg, Cg·R·S) · col (Cg·R·S, P).
func (k *kern) Conv2d(p device.Conv2d, y, x, w, ws device.Operand) {
	_, col := k.convCheck("Conv2d", p, ws, y, x, w)
	if y.Len() == 0 {
		return
	}
	cg, kg, pp, crs := p.C/p.Groups, p.K/p.Groups, p.OH*p.OW, p.C/p.Groups*p.R*p.S
	for gi := 0; gi < p.Groups; gi++ {
		wg, yg := at(w, gi*kg*crs), at(y, gi*kg*pp)
		if col.Nil() {
			k.Gemm(device.Gemm{M: kg, N: pp, K: crs, Alpha: 1, A: wg, LdA: crs,
				B: at(x, gi*cg*pp), LdB: pp, C: yg, LdC: pp,
				Batch: p.N, StrideB: p.C * pp, StrideC: p.K * pp})
			continue
		}
		for n := 0; n < p.N; n++ {
			k.im2col(p, col, x, n, gi)
			k.Gemm(device.Gemm{M: kg, N: pp, K: crs, Alpha: 1, A: wg, LdA: crs,
				B: col, LdB: pp, C: at(yg, n*p.K*pp), LdC: pp, Batch: 1})
		}
	}
}

// Conv2dGradInput: col (Cg·R·S, P) = w[g]ᵀ · dy[n, g] (Kg, P), then
// conv_col2im_T sums col into dx[n, g] (pointwise: the GEMM writes dx).
// 16-bit convolutions keep col in F32 when the workspace holds it (the F32
// workspace autograd passes does), so that dx is rounded once.
func (k *kern) Conv2dGradInput(p device.Conv2d, dx, dy, w, ws device.Operand) {
	_, col := k.convCheck("Conv2dGradInput", p, ws, dy, dx, w)
	if dx.Len() == 0 {
		return
	}
	cg, kg, pp, crs := p.C/p.Groups, p.K/p.Groups, p.OH*p.OW, p.C/p.Groups*p.R*p.S
	if kg == 0 || (col.Nil() && pp == 0) {
		k.Fill(device.Operand{Block: dx.Block, Off: dx.Off, DType: dx.DType, Shape: []int{dx.Len()}}, 0)
		return
	}
	kernel := "conv_col2im_" + Suffix(col.DType)
	if wide := wideCol(p, col.DType, ws); !wide.Nil() {
		col, kernel = wide, "conv_col2im_wide_"+Suffix(dx.DType)
	}
	for gi := 0; gi < p.Groups; gi++ {
		wg, dyg := at(w, gi*kg*crs), at(dy, gi*kg*pp)
		if col.Nil() {
			k.Gemm(device.Gemm{TransA: true, M: cg, N: pp, K: kg, Alpha: 1, A: wg, LdA: crs,
				B: dyg, LdB: pp, C: at(dx, gi*cg*pp), LdC: pp,
				Batch: p.N, StrideB: p.K * pp, StrideC: p.C * pp})
			continue
		}
		for n := 0; n < p.N; n++ {
			k.Gemm(device.Gemm{TransA: true, M: crs, N: pp, K: kg, Alpha: 1, A: wg, LdA: crs,
				B: at(dyg, n*p.K*pp), LdB: pp, C: col, LdC: pp, Batch: 1})
			if pp == 0 {
				k.Fill(col, 0)
			}
			dst := at(dx, (n*p.C+gi*cg)*p.H*p.W)
			k.launch(kernel, Linear(cg*p.H*p.W), append([]Arg{k.Ptr(dst), k.Ptr(col)}, convArgs(p)...)...)
		}
	}
}

// Conv2dGradWeight: dw[g] (Kg, Cg·R·S) = Σ_n dy[n, g] (Kg, P) · colᵀ, the
// first sample's GEMM with beta 0 (dw is overwritten), the others beta 1.
// 16-bit convolutions sum the samples in F32 when the workspace has room
// (gradWeight16); pointwise ones, which have no workspace, sum in their
// dtype.
func (k *kern) Conv2dGradWeight(p device.Conv2d, dw, dy, x, ws device.Operand) {
	dt, col := k.convCheck("Conv2dGradWeight", p, ws, dy, x, dw)
	if dw.Len() == 0 {
		return
	}
	cg, kg, pp, crs := p.C/p.Groups, p.K/p.Groups, p.OH*p.OW, p.C/p.Groups*p.R*p.S
	if p.N == 0 || pp == 0 {
		k.Fill(device.Operand{Block: dw.Block, Off: dw.Off, DType: dw.DType, Shape: []int{dw.Len()}}, 0)
		return
	}
	if acc, rows := accRows(p, dt, ws); rows > 0 {
		k.gradWeight16(p, dw, dy, x, col, acc, rows)
		return
	}
	for gi := 0; gi < p.Groups; gi++ {
		dwg, dyg := at(dw, gi*kg*crs), at(dy, gi*kg*pp)
		for n := 0; n < p.N; n++ {
			b := at(x, (n*p.C+gi*cg)*pp)
			if !col.Nil() {
				k.im2col(p, col, x, n, gi)
				b = col
			}
			k.Gemm(device.Gemm{TransB: true, M: kg, N: crs, K: pp, Alpha: 1, Beta: sampleBeta(n),
				A: at(dyg, n*p.K*pp), LdA: pp, B: b, LdB: pp, C: dwg, LdC: crs, Batch: 1})
		}
	}
}

// sampleBeta is the GEMM beta of sample n of a sum over samples: 0 for the
// first (it overwrites), 1 after.
func sampleBeta(n int) float64 {
	if n == 0 {
		return 0
	}
	return 1
}

// wideCol returns the workspace as an F32 im2col matrix for a 16-bit
// convolution's input gradient, a nil-Block operand when dt is not 16-bit
// or the workspace is too small (a 16-bit one).
func wideCol(p device.Conv2d, dt dtype.DType, ws device.Operand) device.Operand {
	n := p.Workspace()
	if !dt.IsLowPrecision() || n == 0 || ws.Len()*ws.DType.Size() < 4*n || ws.Off*ws.DType.Size()%4 != 0 {
		return device.Operand{}
	}
	return device.Operand{Block: ws.Block, Off: ws.Off * ws.DType.Size() / 4, DType: dtype.F32, Shape: []int{n}}
}

// accRows places an F32 accumulator for rows of a 16-bit dw[g] in the
// workspace after the 16-bit im2col matrix (the workspace autograd passes
// is F32, twice the bytes the matrix needs): it returns the accumulator and
// how many rows of dw[g] it holds, 0 when dt is not 16-bit, the
// convolution is pointwise (no workspace) or no row fits (OH·OW < 2).
func accRows(p device.Conv2d, dt dtype.DType, ws device.Operand) (device.Operand, int) {
	n := p.Workspace()
	if !dt.IsLowPrecision() || n == 0 {
		return device.Operand{}, 0
	}
	crs := p.C / p.Groups * p.R * p.S
	start := ws.Off*ws.DType.Size() + (n*dt.Size()+3)/4*4 // bytes, 4-aligned
	free := ws.Off*ws.DType.Size() + ws.Len()*ws.DType.Size() - start
	rows := min(p.K/p.Groups, free/(4*crs))
	if rows < 1 {
		return device.Operand{}, 0
	}
	return device.Operand{Block: ws.Block, Off: start / 4, DType: dtype.F32, Shape: []int{rows * crs}}, rows
}

// gradWeight16 is Conv2dGradWeight for 16-bit operands with the samples
// summed in F32: for each block of rows of dw[g], the samples' GEMMs
// (16-bit dy and im2col, F32 output) add into acc, which one cast then
// writes into dw. When the block is all of dw[g] (Kg ≤ OH·OW/2) that is
// the 16-bit path's launches plus one cast per group; otherwise each block
// builds the im2col matrices again.
func (k *kern) gradWeight16(p device.Conv2d, dw, dy, x, col, acc device.Operand, rows int) {
	kg, pp, crs := p.K/p.Groups, p.OH*p.OW, p.C/p.Groups*p.R*p.S
	for gi := 0; gi < p.Groups; gi++ {
		dyg := at(dy, gi*kg*pp)
		for r0 := 0; r0 < kg; r0 += rows {
			m := min(rows, kg-r0)
			for n := 0; n < p.N; n++ {
				k.im2col(p, col, x, n, gi)
				k.Gemm(device.Gemm{TransB: true, M: m, N: crs, K: pp, Alpha: 1, Beta: sampleBeta(n),
					A: at(dyg, n*p.K*pp+r0*pp), LdA: pp, B: col, LdB: pp, C: acc, LdC: crs, Batch: 1})
			}
			dst := device.Operand{Block: dw.Block, Off: dw.Off + (gi*kg+r0)*crs, DType: dw.DType, Shape: []int{m * crs}}
			k.Copy(dst, device.Operand{Block: acc.Block, Off: acc.Off, DType: dtype.F32, Shape: []int{m * crs}})
		}
	}
}
