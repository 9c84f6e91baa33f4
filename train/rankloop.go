package train

import (
	"fmt"
	"io"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
)

// Steps runs n optimizer steps of the rank's part of the batch through st
// (f as Stepper.Step takes it) and returns the last step's loss. With a
// progress display (rank 0's; nil on the others) it shows each step, the
// throughput counted in global batches of batch samples since began.
func (r *Rank) Steps(st *Stepper, n, batch int, began time.Time, prog *Progress, f func(*autograd.Scope, int) *autograd.Tensor) (float64, error) {
	var loss float64
	for i := range n {
		var err error
		if loss, _, err = st.Step(f); err != nil {
			if prog != nil {
				prog.Done()
			}
			return loss, fmt.Errorf("step %d: %w", i, err)
		}
		if prog != nil {
			prog.Step(i, loss, float64((i+1)*batch)/time.Since(began).Seconds(), r.Dev)
		}
	}
	return loss, nil
}

// FinishRanks completes the report of a data-parallel run of steps steps
// of batch samples, as rank 0 sees it: the final loss is the mean of the
// last losses (final, by rank) of this process's ranks (each over its part
// of the batch, so in process the mean is the global batch's), peak_bytes are rank 0's training peaks (trained), and
// extra holds skipped_steps, ranks (every rank's peaks) and host_ranks
// (with offload). It prints trained's memory summary and the table of the
// ranks' peaks to out.
func FinishRanks(out io.Writer, rep *Report, ranks []*Rank, final []float64, trained device.Stats, steps, batch, skipped int) {
	rep.FinalLoss = 0
	for _, l := range final {
		rep.FinalLoss += l / float64(len(ranks))
	}
	dev, host := rankPeaks(ranks)
	rep.PeakBytes, rep.Stats = dev[0], trained
	rep.SamplesPerSec = float64(steps*batch) / rep.Seconds
	if rep.Extra == nil {
		rep.Extra = map[string]any{}
	}
	rep.Extra["skipped_steps"], rep.Extra["ranks"] = skipped, dev
	if host != nil {
		rep.Extra["host_ranks"] = host
	}
	fmt.Fprint(out, trained.Summary())
	fmt.Fprint(out, rankTable(dev, host))
}
