package nn

// BlockFLOPs is the forward convolution FLOPs, for batch images of h × w
// pixels, of each layer the ResNet's RunBlocks runs: the stem, then every
// residual block (its convolutions and projection shortcut; batch norms,
// ReLUs and pooling are not counted). A convolution of K filters over C/G
// channels with a kh × kw kernel costs 2·N·H'·W'·K·(C/G)·kh·kw, H' × W'
// its output. Selective recomputation reruns none of them: every
// convolution's output is saved by the batch norm after it.
func (r *ResNet) BlockFLOPs(batch, h, w int) []int64 {
	fl, h, w := conv2dFLOPs(r.Conv1, batch, h, w)
	out := []int64{fl}
	if r.Config.Stem == "imagenet" { // the 3×3, stride-2 max-pool
		h, w = (h+2-3)/2+1, (w+2-3)/2+1
	}
	for _, l := range r.Blocks() {
		var convs []*Conv2d
		var proj *shortcut
		switch b := l.(type) {
		case *BasicBlock:
			convs, proj = []*Conv2d{b.Conv1, b.Conv2}, b.Downsample
		case *Bottleneck:
			convs, proj = []*Conv2d{b.Conv1, b.Conv2, b.Conv3}, b.Downsample
		}
		var sum int64
		bh, bw := h, w
		for _, c := range convs {
			var f int64
			f, bh, bw = conv2dFLOPs(c, batch, bh, bw)
			sum += f
		}
		if proj != nil {
			f, _, _ := conv2dFLOPs(proj.Conv, batch, h, w)
			sum += f
		}
		out, h, w = append(out, sum), bh, bw
	}
	return out
}

// conv2dFLOPs is c's forward FLOPs on batch images of h × w, and its
// output's height and width.
func conv2dFLOPs(c *Conv2d, batch, h, w int) (int64, int, int) {
	o := c.Opt
	dim := func(n, i int) int {
		s, d := max(o.Stride[i], 1), max(o.Dilation[i], 1)
		return (n+2*o.Padding[i]-d*(c.Kernel[i]-1)-1)/s + 1
	}
	oh, ow := dim(h, 0), dim(w, 1)
	g := max(o.Groups, 1)
	return 2 * int64(batch) * int64(oh) * int64(ow) * int64(c.Out) * int64(c.In/g) * int64(c.Kernel[0]) * int64(c.Kernel[1]), oh, ow
}
