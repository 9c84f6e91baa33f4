package prune

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
)

// Criterion says how channels are ranked; the lowest-ranked go.
type Criterion int

const (
	// L1 ranks an output channel by the sum of the absolute values of its
	// weights, Σ|w| (Li et al., "Pruning Filters for Efficient ConvNets").
	// It is the default.
	L1 Criterion = iota
	// Taylor ranks an output channel by Σ|w·∂L/∂w| over its weights, the
	// first-order Taylor estimate of the loss change when the channel is
	// removed (Molchanov et al.), from the gradients the caller left in
	// the weights (run backward on one or more batches first, without
	// ZeroGrad).
	Taylor
)

// String returns "l1" or "taylor".
func (c Criterion) String() string {
	switch c {
	case L1:
		return "l1"
	case Taylor:
		return "taylor"
	}
	return fmt.Sprintf("Criterion(%d)", int(c))
}

// ParseCriterion returns the criterion named s ("l1" or "taylor"), for
// command-line flags.
func ParseCriterion(s string) (Criterion, error) {
	switch strings.ToLower(s) {
	case "l1":
		return L1, nil
	case "taylor":
		return Taylor, nil
	}
	return 0, fmt.Errorf("prune: criterion %q: want l1 or taylor", s)
}

// Options configures ResNet and GPT. Its zero value ranks by L1 norm and
// counts FLOPs at the model's natural input size.
type Options struct {
	// By ranks the channels (L1, the default, or Taylor).
	By Criterion
	// Height and Width are the image size the ResNet report counts FLOPs
	// for; 0 means 224 with the ImageNet stem and 28 with the small one.
	Height, Width int
	// Tokens is the sequence length the GPT report counts FLOPs for; 0
	// means the model's Context.
	Tokens int
}

// Report says what pruning removed.
type Report struct {
	// ParamsBefore and ParamsAfter count trainable elements (nn.Count).
	ParamsBefore, ParamsAfter int64
	// BytesBefore and BytesAfter are the bytes of parameters and buffers
	// (nn.ParamBytes): what the allocator's parameter tag holds for the
	// model.
	BytesBefore, BytesAfter int64
	// FLOPsBefore and FLOPsAfter are the forward pass's floating-point
	// operations per sample at Input (FLOPs, GPTFLOPs).
	FLOPsBefore, FLOPsAfter int64
	// Input is the size FLOPs are counted for: (H, W) for a ResNet, (T)
	// for a GPT.
	Input []int
	// Layers lists every group of channels ranked, in model order.
	Layers []LayerReport
}

// LayerReport is one pruned group of channels.
type LayerReport struct {
	// Name is the module whose outputs were ranked: a convolution
	// ("layer1.0.conv1"), an attention ("transformer.h.0.attn") or an
	// MLP ("transformer.h.0.mlp").
	Name string
	// Unit is what was counted: "channels", "heads" or "hidden".
	Unit string
	// Before and After count the units.
	Before, After int
	// Kept lists the indices of the units kept, ascending.
	Kept []int
}

// Summary returns one line per quantity — parameters, parameter bytes and
// FLOPs — before and after, with the share that remains.
func (r Report) Summary() string {
	var b strings.Builder
	line := func(what string, before, after int64) {
		pct := 100.0
		if before > 0 {
			pct = 100 * float64(after) / float64(before)
		}
		fmt.Fprintf(&b, "%-16s %d → %d (%.1f%%)\n", what, before, after, pct)
	}
	line("parameters", r.ParamsBefore, r.ParamsAfter)
	line("parameter bytes", r.BytesBefore, r.BytesAfter)
	line("FLOPs at "+sizeString(r.Input), r.FLOPsBefore, r.FLOPsAfter)
	return b.String()
}

// sizeString writes an input size as 28×28 (an image) or T=64 (tokens).
func sizeString(s []int) string {
	if len(s) == 1 {
		return fmt.Sprintf("T=%d", s[0])
	}
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, "×")
}

// checkFraction returns an error unless 0 ≤ f < 1.
func checkFraction(what string, f float64) error {
	if !(f >= 0 && f < 1) {
		return fmt.Errorf("%s %g: want 0 ≤ fraction < 1 (the share of units removed)", what, f)
	}
	return nil
}

// checkCriterion returns an error for an unknown criterion.
func checkCriterion(c Criterion) error {
	if c != L1 && c != Taylor {
		return fmt.Errorf("criterion %d: want L1 or Taylor", int(c))
	}
	return nil
}

// KeepCount returns how many of n units remain when fraction of them is
// removed: n − round(fraction·n), at least 1. Models pruned with the same
// fractions have the same shapes, whatever their weights.
func KeepCount(n int, fraction float64) int {
	return max(n-int(math.Round(fraction*float64(n))), 1)
}

// Importance returns one score per output channel (per index of w's first
// dimension) by criterion by: Σ|w| over the channel's weights for L1,
// Σ|w·g| with g = w.Grad() for Taylor. It is an error for Taylor when w has
// no gradient. On a device that holds no values (meta) every score is 0.
// Scores are summed in float64 in index order.
func Importance(w *autograd.Tensor, by Criterion) ([]float64, error) {
	if err := checkCriterion(by); err != nil {
		return nil, fmt.Errorf("prune.Importance: %w", err)
	}
	s, err := scores(w, by)
	if err != nil {
		return nil, fmt.Errorf("prune.Importance: %w", err)
	}
	return s, nil
}

// errNoGrad is wrapped by the error for Taylor ranking without gradients.
var errNoGrad = errors.New("no gradient")

// scores is Importance without the operation's name.
func scores(w *autograd.Tensor, by Criterion) ([]float64, error) {
	if w == nil || w.Released() {
		return nil, fmt.Errorf("weight is nil or released")
	}
	if w.Rank() == 0 || w.Dim(0) == 0 {
		return nil, fmt.Errorf("weight %q %v: want at least one output channel", w.Name(), w.Shape())
	}
	rows := w.Dim(0)
	per := w.Len() / rows
	var g *autograd.Tensor
	if by == Taylor {
		if g = w.Grad(); g == nil {
			return nil, fmt.Errorf("taylor criterion: weight %q %v has %w: run backward on one or more batches before pruning (and do not ZeroGrad)", w.Name(), w.Shape(), errNoGrad)
		}
	}
	out := make([]float64, rows)
	if w.Device().Kernels() == nil {
		return out, nil
	}
	wv := w.Float64s()
	var gv []float64
	if g != nil {
		gv = g.Float64s()
	}
	for r := range rows {
		s := 0.0
		for i := r * per; i < (r+1)*per; i++ {
			if gv != nil {
				s += math.Abs(wv[i] * gv[i])
			} else {
				s += math.Abs(wv[i])
			}
		}
		out[r] = s
	}
	return out, nil
}

// Top returns the indices of the k highest scores, ascending; of equal
// scores the lower index ranks higher. A NaN score ranks lowest.
func Top(scores []float64, k int) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	key := func(v float64) float64 {
		if math.IsNaN(v) {
			return math.Inf(-1)
		}
		return v
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(key(scores[b]), key(scores[a])) })
	k = min(max(k, 0), len(idx))
	out := idx[:k]
	slices.Sort(out)
	return out
}

// where names an operation on a model: "prune.ResNet net", or the
// operation alone for a model without a name.
func where(op, model string) string {
	if model == "" {
		return op
	}
	return op + " " + model
}
