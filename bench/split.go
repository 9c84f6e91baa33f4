package bench

import (
	"strconv"

	"github.com/headroom-ml/headroom/plan"
)

// splitTechniques are the rows of a GPT split over ranks: 2-way tensor
// parallelism, 2 pipeline stages (1F1B over 2 micro-batches), and the
// two composed with 2 data-parallel copies (8 ranks, ZeRO 1 over the
// copies). Their rows are the largest rank's peak (Row.Peak) and every
// rank's (Row.RankPeaks), from the allocator of each rank's own cpu
// device, and the step time of the whole mesh.
func splitTechniques() []Technique {
	set := func(f func(c *plan.Config)) func(*plan.Config, *Row) { return func(c *plan.Config, _ *Row) { f(c) } }
	return []Technique{
		{Name: "tp 2", GPT: true, Apply: set(func(c *plan.Config) { c.TP = 2 })},
		{Name: "pp 2 + accum 2", GPT: true, Apply: set(func(c *plan.Config) { c.PP, c.Accum = 2, 2 })},
		{Name: "dp 2 + tp 2 + pp 2 + zero 1 + accum 2", GPT: true, Apply: set(func(c *plan.Config) { c.Ranks, c.TP, c.PP, c.Zero, c.Accum = 2, 2, 2, 1, 2 })},
	}
}

// applies reports whether t runs on s's model: the GPT-only techniques
// (tensor and pipeline parallelism) skip the ResNet.
func applies(t Technique, s Setup) bool {
	if !t.GPT {
		return true
	}
	m, err := plan.Lookup(s.Plan.Model)
	return err == nil && m.Kind == "gpt"
}

// splitFlags returns the example's flags for c's split: --tp and --pp,
// and --ranks as the whole mesh (the example's --ranks counts every rank,
// the planner's Ranks the data-parallel copies); under PP untied
// embeddings, as the planner's step (splitGPT). Nil without a split.
func splitFlags(c plan.Config) []string {
	tp, pp := max(c.TP, 1), max(c.PP, 1)
	if tp*pp == 1 {
		return nil
	}
	var f []string
	if tp > 1 {
		f = append(f, "--tp="+strconv.Itoa(tp))
	}
	if pp > 1 { // the planner's split: untied (plan.Config.TP)
		f = append(f, "--pp="+strconv.Itoa(pp), "--tie-embeddings=false")
	}
	if n := max(c.Ranks, 1) * tp * pp; n > tp*pp {
		f = append(f, "--ranks="+strconv.Itoa(n))
	}
	return f
}
