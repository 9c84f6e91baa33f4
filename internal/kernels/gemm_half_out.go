package kernels

// GemmHalfBF16 is GemmHalfBias that also stores C narrowed to bfloat16
// (round to nearest even, as F32ToBF16) in out, indexed as c: each tile of
// the blocked path is narrowed when its last kc slice is done, while it is
// still in L1, instead of in a second pass over the whole of C. Elements
// of out outside the product's rows and columns are not written. The
// result is the same as F32ToBF16 over C after GemmHalfBias, bit for bit.
// c is float32 scratch for C, read when beta is not 0; afterwards it holds
// C only where a tile needed it (several kc slices, edges): a whole tile
// of a one-slice, beta-0 product goes from the kernel to a 4 KiB scratch
// tile and is narrowed from there.
func GemmHalfBF16(g GemmArgs, aBits, bBits []uint16, aBF16, bBF16 bool, bias, c []float32, out []uint16) {
	g.check("GemmHalf", len(aBits), len(bBits), len(c))
	checkBias("GemmHalf", bias, g.N)
	if len(out) != len(c) {
		panic("kernels: GemmHalfBF16 out and c differ in length")
	}
	if g.M == 0 || g.N == 0 {
		return
	}
	if g.K == 0 || g.Alpha == 0 {
		scaleC(g, bias, c)
		narrowC(g, c, out)
		return
	}
	a := operand[float32]{h: aBits, bf16: aBF16}
	b := operand[float32]{h: bBits, bf16: bBF16}
	gemmBlockedOut(halfKernel(g, aBF16, bBF16), &sgemmJobs, g, nil, a, b, bias, c, sameAs(g, out))
}

// narrowC narrows every C of the batch (rows M of N values) into out.
func narrowC(g GemmArgs, c []float32, out []uint16) {
	for bi := range max(g.Batch, 1) {
		narrowTile(out, c, g.OffC+bi*g.StrideC, g.LdC, g.M, g.N)
	}
}

// narrowTile narrows rows rows of cols values of c at c[at:] (row stride
// ldc) into out at the same indices.
func narrowTile(out []uint16, c []float32, at, ldc, rows, cols int) {
	narrowTileFrom(out, at, ldc, c[at:], ldc, rows, cols)
}

// narrowTileFrom narrows rows rows of cols values of src (row stride lds)
// into out at out[at:] (row stride ldo): a tile 32 wide in one assembly
// call where the CPU allows (row by row, each a call of f32ToBF16, took
// 55 ns per row of 32 in the GPT step's profile), else row by row.
func narrowTileFrom(out []uint16, at, ldo int, src []float32, lds, rows, cols int) {
	if narrowTileFast(out[at:], ldo, src, lds, rows, cols) {
		return
	}
	for r := range rows {
		f32ToBF16(out[at+r*ldo:at+r*ldo+cols], src[r*lds:r*lds+cols])
	}
}
