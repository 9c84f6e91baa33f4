package prune

import (
	"fmt"

	"github.com/headroom-ml/headroom/nn"
)

// FLOPs returns the floating-point operations of r's forward pass for one
// h×w image: 2 per multiply-add of every convolution
// (2·Out·In/Groups·KH·KW·OH·OW) and of fc (2·In·Out), at r's current
// (possibly pruned) sizes. Batch norms, ReLUs, pooling, additions and
// biases are not counted (as fvcore and torchvision's published GFLOPS do
// not; those publish multiply-adds, half this number). It is an error for
// an image too small for a layer.
func FLOPs(r *nn.ResNet, h, w int) (int64, error) {
	if r == nil {
		return 0, fmt.Errorf("prune.FLOPs: nil model")
	}
	if h <= 0 || w <= 0 {
		return 0, fmt.Errorf("%s: image %d×%d: want both sides > 0", where("prune.FLOPs", r.Name), h, w)
	}
	var total int64
	conv := func(c *nn.Conv2d) error {
		f, oh, ow, err := convFLOPs(c, h, w)
		if err != nil {
			return fmt.Errorf("%s: %w", where("prune.FLOPs", r.Name), err)
		}
		total, h, w = total+f, oh, ow
		return nil
	}
	if err := conv(r.Conv1); err != nil {
		return 0, err
	}
	if r.Config.Stem == "imagenet" { // max pool 3×3, stride 2, padding 1
		h, w = (h+2-3)/2+1, (w+2-3)/2+1
	}
	for _, blk := range r.Blocks() {
		var main []*nn.Conv2d
		var short *nn.Conv2d
		switch b := blk.(type) {
		case *nn.BasicBlock:
			main = []*nn.Conv2d{b.Conv1, b.Conv2}
			if b.Downsample != nil {
				short = b.Downsample.Conv
			}
		case *nn.Bottleneck:
			main = []*nn.Conv2d{b.Conv1, b.Conv2, b.Conv3}
			if b.Downsample != nil {
				short = b.Downsample.Conv
			}
		default:
			return 0, fmt.Errorf("%s: block %T: want *nn.BasicBlock or *nn.Bottleneck", where("prune.FLOPs", r.Name), blk)
		}
		h0, w0 := h, w
		if short != nil {
			f, _, _, err := convFLOPs(short, h0, w0)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", where("prune.FLOPs", r.Name), err)
			}
			total += f
		}
		for _, c := range main {
			if err := conv(c); err != nil {
				return 0, err
			}
		}
	}
	return total + 2*int64(r.FC.In)*int64(r.FC.Out), nil
}

// convFLOPs returns c's FLOPs on one h×w input and its output size.
func convFLOPs(c *nn.Conv2d, h, w int) (flops int64, oh, ow int, err error) {
	one := func(v int) int { return max(v, 1) }
	out := func(n, k, s, p, d int) int {
		span := one(d)*(k-1) + 1
		if n+2*p < span {
			return 0
		}
		return (n+2*p-span)/one(s) + 1
	}
	o := c.Opt
	oh = out(h, c.Kernel[0], o.Stride[0], o.Padding[0], o.Dilation[0])
	ow = out(w, c.Kernel[1], o.Stride[1], o.Padding[1], o.Dilation[1])
	if oh == 0 || ow == 0 {
		return 0, 0, 0, fmt.Errorf("%s: input %d×%d is smaller than its %v kernel", c.Name, h, w, c.Kernel)
	}
	macs := int64(c.Out) * int64(c.In/one(o.Groups)) * int64(c.Kernel[0]*c.Kernel[1]) * int64(oh*ow)
	return 2 * macs, oh, ow, nil
}

// GPTFLOPs returns the floating-point operations of g's forward pass for
// one sequence of t tokens: 2 per multiply-add of every Linear (2·t·In·Out:
// c_attn, attn.c_proj, c_fc, mlp.c_proj in every layer and the LM head,
// tied or not) and of attention's two products, q·kᵀ and the weights
// times v, counted over the full t×t square (4·t²·D per head, D the head
// width), at g's current (possibly pruned) sizes. Embeddings, layer
// norms, softmax, GELU and biases are not counted. It is an error for t
// outside [1, Context].
func GPTFLOPs(g *nn.GPT, t int) (int64, error) {
	if g == nil {
		return 0, fmt.Errorf("prune.GPTFLOPs: nil model")
	}
	if t < 1 || t > g.Config.Context {
		return 0, fmt.Errorf("%s: %d tokens: want 1 ≤ tokens ≤ context %d", where("prune.GPTFLOPs", g.Name), t, g.Config.Context)
	}
	T := int64(t)
	lin := func(l *nn.Linear) int64 { return 2 * T * int64(l.In) * int64(l.Out) }
	var total int64
	for _, k := range g.Blocks { // a shared block counts once per layer
		a := k.Attn
		d := int64(a.Attn.Out / (3 * a.Heads))
		total += lin(a.Attn) + lin(a.Proj) + 4*T*T*d*int64(a.Heads)
		total += lin(k.MLP.FC) + lin(k.MLP.Proj)
	}
	return total + 2*T*int64(g.Config.Width)*int64(g.Config.Vocab), nil
}
