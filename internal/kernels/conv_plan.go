package kernels

// convPlan is how a convolution call cuts its work into units and tiles:
// a function of the kernel, the convolution and how its operands are held,
// nothing else (not the worker count), so that ConvWorkspace can size the
// call's scratch before it runs.
type convPlan struct {
	kind   ConvKind
	half   bool // 16-bit inputs (the job's T is float32)
	narrow bool // a 16-bit output
	size   int  // bytes of one filter element: 4, or 8 for float64

	band, bands   int // output rows per band; bands per sample
	spu           int // samples per unit (weight gradient: per GEMM), side by side in the tile
	block, blocks int // per unit: channels (input gradient) or dw columns (weight gradient); blocks per group
	chunks        int // weight gradient: chunks of samples, each summed into its own dw
	units         int
	tile          int // elements of one worker's tile (0: none needed)
	htile         convHalfTile
}

// plan sets the bands, blocks, units and tile size of the call.
func (c *convPlan) plan(p *ConvArgs, d *convDims) {
	rs, ng := p.R*p.S, p.N*p.Groups
	// Bands: as many output rows as fit a tile of all the group's im2col
	// rows; pointwise convolutions need no tile and split only to make
	// enough units.
	c.band = p.OH
	switch {
	case p.OH == 0 || ng == 0:
	case !d.pointwise:
		if d.crs*p.OW > 0 {
			c.band = min(p.OH, max(1, convTile/(d.crs*p.OW), ceilDiv(convMinCols, p.OW)))
		}
	case c.kind == ConvForward && ng < convUnits:
		c.band = ceilDiv(p.OH, min(p.OH, ceilDiv(convUnits, ng)))
	}
	c.bands = 0
	if c.band > 0 {
		c.bands = ceilDiv(p.OH, c.band)
	}
	c.block, c.blocks, c.chunks, c.spu = 0, 1, 1, 1
	switch c.kind {
	case ConvForward:
		c.spu = c.samplesPerUnit(d, ng/convUnits)
		c.units = ceilDiv(p.N, c.spu) * p.Groups * c.bands
		c.tile = d.crs * c.spu * c.band * p.OW
	case ConvGradInput:
		c.block = d.cg
		if ng > 0 && ng < convUnits && d.cg > 1 {
			c.block = ceilDiv(d.cg, min(d.cg, ceilDiv(convUnits, ng)))
		}
		c.spu = c.samplesPerUnit(d, ng/convUnits)
		if c.spu > 1 && !c.half {
			c.block = min(c.block, filterBlock(rs, d.kg, c.size))
		}
		c.blocks = ceilDiv(d.cg, max(c.block, 1))
		c.units = ceilDiv(p.N, c.spu) * p.Groups * c.blocks
		c.tile = c.block * rs * c.spu * c.band * p.OW
	case ConvGradWeight:
		c.planGradWeight(p, d)
	}
	if d.pointwise && c.spu == 1 {
		c.tile = 0
	}
	if c.half {
		c.planHalf(p, d)
	} else if c.spu > 1 && c.kind != ConvGradWeight {
		// The forward GEMM's output, then copied to y; the input
		// gradient's dy rows, side by side.
		c.tile += d.kg * c.spu * c.band * p.OW
	}
	if c.tile > 0 && !c.half && c.kind != ConvGradInput {
		c.tile += c.panelPad(p, d, convPanelNR) + c.stageSize(p, d)
	}
}

// stageSize is the values of a float forward or weight-gradient tile's
// staging block, at the tile's end (conv_panel.go): convStage (or a
// row of the unit's columns, when longer; at most its whole im2col matrix)
// for the forward pass,
// convPanelNR rows of them for the weight gradient.
func (c *convPlan) stageSize(p *ConvArgs, d *convDims) int {
	nb := c.spu * c.band * p.OW
	if c.kind == ConvForward {
		return min(max(convStage, nb), d.crs*nb) // a block of rows, at most the whole matrix
	}
	return convPanelNR * nb
}

// convPanelNR is the widest nr of the float GEMM kernels (8, 16 or 32, all
// dividing it): padding whole panels of it covers every kernel's.
const convPanelNR = 32

// panelPad is the values a float forward or weight-gradient tile takes
// beyond the dense im2col tile when written as whole B panels of width nr
// (conv_panel.go): the forward pass pads its columns, the weight gradient
// its block of dw columns.
func (c *convPlan) panelPad(p *ConvArgs, d *convDims, nr int) int {
	nb := c.spu * c.band * p.OW
	if c.kind == ConvForward {
		return d.crs * (roundUp(nb, nr) - nb)
	}
	return (roundUp(c.block, nr) - c.block) * nb
}

// planGradWeight sets the weight gradient's blocks, chunks, units and
// tile.
func (c *convPlan) planGradWeight(p *ConvArgs, d *convDims) {
	c.block = d.crs
	switch {
	case p.Groups >= convUnits:
	case p.K*d.crs <= convDWSmall:
		c.chunks = min(p.N, ceilDiv(convUnits, p.Groups))
	case d.crs >= 2*convMinDW:
		blocks := convWGradBlocks
		if c.samplesPerUnit(d, p.N) > 1 {
			blocks = max(1, blocks/2) // each block gathers dy's rows, then packs them
		}
		per := max(convMinDW, ceilDiv(d.crs, ceilDiv(blocks, p.Groups)))
		c.block = roundUp(per, 16) // whole panels of the GEMM's B
	}
	c.blocks = ceilDiv(d.crs, max(c.block, 1))
	c.units = c.chunks * p.Groups * c.blocks
	c.spu = c.samplesPerUnit(d, p.N/max(c.chunks, 1))
	c.tile = c.block * c.spu * c.band * p.OW
	if c.spu > 1 {
		c.tile += d.kg * c.spu * c.band * p.OW // dy's rows, side by side
	}
}

// samplesPerUnit returns the samples a unit (or a weight-gradient GEMM)
// takes side by side, at most most: one unless the convolution has one
// band of fewer than convMinCols outputs, then as many as make
// convMinCols columns. A pointwise forward or input gradient takes one
// (its GEMMs read x or dy in place) unless its planes have fewer than
// convDirectCols outputs: one GEMM per sample would stream all the
// filters for a few columns of one small plane. (For 16-bit operands
// too: over ResNet-50's 4×4 planes BenchmarkConvVsGemmResNet50 measured
// the bfloat16 forward at 0.54–0.72 of the GEMM one sample at a time,
// 0.68–0.86 gathered, the input gradient 0.61–0.68 and 0.79–0.83.) A
// pointwise weight gradient gathers below convMinCols like any other:
// one GEMM per sample reads and writes all of dw for a depth of one
// plane (ResNet-50's 8×8×256→1024 bfloat16 weight gradient, 5 runs
// alternated: 5.84–6.13 ms per sample, 3.95–4.88 ms gathered; float32
// and the 8×8×1024→256 layer within noise).
func (c *convPlan) samplesPerUnit(d *convDims, most int) int {
	direct := d.pointwise && d.ohw >= convDirectCols && c.kind != ConvGradWeight
	if direct || c.bands != 1 || d.ohw >= convMinCols {
		return 1
	}
	return max(1, min(ceilDiv(convMinCols, d.ohw), most))
}

// planHalf sets the tile layout of a 16-bit call from plan's sizes.
func (c *convPlan) planHalf(p *ConvArgs, d *convDims) {
	t := convHalfTile{}
	switch c.kind {
	case ConvForward:
		t.t16 = c.tile
		if c.narrow || c.spu > 1 {
			t.fo = d.kg * c.spu * c.band * p.OW
		}
	case ConvGradInput:
		t.tf = c.tile
		if c.spu > 1 {
			t.t16 = d.kg * c.spu * c.band * p.OW
		}
		if c.narrow {
			t.fo = c.block * d.hw
		}
	case ConvGradWeight:
		t.t16 = c.tile
	}
	c.htile = t
	c.tile = 0
	if w := t.words(); t.t16+t.tf+t.fo > 0 {
		c.tile = w
	}
	if pt, ok := c.pairTile(p, d); ok {
		c.tile = max(c.tile, pt.words())
	}
}

// pairNR is the nr of both bfloat16 pair kernels (AMX, VDPBF16PS).
const pairNR = 32

// pairTile is the layout of a bfloat16 forward unit that writes its
// im2col as pair panels (conv_half_pairs.go) where the call's shape
// allows it, whatever the CPU: the whole packed B for nr 32 (both pair
// kernels') and the column masks in place of the 16-bit tile. The job
// takes it at run time (pairPlan) where its kernel and operands do.
func (c *convPlan) pairTile(p *ConvArgs, d *convDims) (convHalfTile, bool) {
	if c.kind != ConvForward || c.spu > 1 || d.pointwise || !sameConv(p) {
		return convHalfTile{}, false
	}
	nb := c.band * p.OW
	t := c.htile
	t.tp, t.t16 = roundUp(nb, pairNR)*d.crs, pairMaskWords(p, nb)
	return t, true
}
