package parallel

import "fmt"

// Schedule is the order in which each pipeline stage runs the forward and
// backward passes of a step's micro-batches.
type Schedule int

const (
	// OneFOneB is the non-interleaved one-forward-one-backward schedule
	// (PipeDream-Flush, Megatron-LM's default): stage s of P runs
	// min(P−s−1, M) forwards (warm-up), then alternates one forward and
	// one backward, then runs the backwards left (cool-down). A stage
	// holds the activations of at most P−s micro-batches at once.
	OneFOneB Schedule = iota
	// GPipe runs every micro-batch's forward, then every backward: each
	// stage holds the activations of all M micro-batches at once.
	GPipe
)

// String names the schedule.
func (s Schedule) String() string {
	switch s {
	case OneFOneB:
		return "1f1b"
	case GPipe:
		return "gpipe"
	}
	return fmt.Sprintf("schedule %d", int(s))
}

// work is one forward or backward pass of one micro-batch on a stage.
type work struct {
	backward bool
	micro    int
}

// schedule returns the passes stage runs, in order, under sched for
// stages stages and m micro-batches. Backward passes run in micro-batch
// order under both schedules, so that every parameter's gradient is the
// sum of the micro-batches' contributions in the order one device with
// gradient accumulation adds them.
func schedule(sched Schedule, stage, stages, m int) []work {
	warm := m
	if sched == OneFOneB {
		warm = min(stages-stage-1, m)
	}
	var ps []work
	f, b := 0, 0
	for ; f < warm; f++ {
		ps = append(ps, work{micro: f})
	}
	for ; f < m; f, b = f+1, b+1 {
		ps = append(ps, work{micro: f}, work{backward: true, micro: b})
	}
	for ; b < m; b++ {
		ps = append(ps, work{backward: true, micro: b})
	}
	return ps
}

// Bubble returns the idle fraction of a pipeline of stages stages over m
// micro-batches, (P−1)/(M+P−1), for both schedules: with equal stages each
// stage idles P−1 of the M+P−1 slots of a forward (and as many of a
// backward) while the pipeline fills and drains.
func Bubble(stages, m int) float64 {
	if stages < 1 || m < 1 {
		return 0
	}
	return float64(stages-1) / float64(m+stages-1)
}
