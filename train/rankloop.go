package train

import (
	"fmt"
	"io"
	"time"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/parallel"
)

// trainRanks is Train with data parallelism (--ranks, --zero, --offload):
// each rank is a goroutine with its own device cpu:r (of --mem-limit's
// capacity), its own replica and Stepper, its model wrapped in a DDP
// engine; each replica yields the same global batches and trains on its
// rank's part of them. --resume and --save read and write each rank's
// shard of the snapshot (LoadShard, SaveShard). Rank 0 prints the header and the progress and
// evaluates (under --zero 3 every rank first gathers the whole model,
// DDP.Unshard); the report's peak_bytes are rank 0's training peaks, and
// extra.ranks lists every rank's (extra.host_ranks the hosts' with
// --offload).
func trainRanks[R Replica](c *Common, out io.Writer, p *Program[R]) (*Report, error) {
	capacity, err := c.Capacity()
	if err != nil {
		return nil, err
	}
	rep := &Report{Example: p.Name, Model: p.Model, Steps: c.End(p.Steps), EvalMetric: p.Metric, CapacityBytes: capacity, Flags: c.Values()}
	final := make([]float64, c.Ranks) // each rank's last loss, over its part of the batch
	var ev Eval
	var trained device.Stats
	var skipped int
	began := time.Now()
	ranks, err := c.RunRanks(capacity, func(rk *Rank) error {
		r, err := newRun(c, out, p, rk.Dev, rk)
		if err != nil {
			return err
		}
		defer r.release()
		if rk.Comm.Rank() == 0 {
			rep.Params, rep.Kernels = nn.Count(r.R.Module()), kernelPath(rk.Dev)
			r.header(p, c.RanksDesc(rk),
				fmt.Sprintf("global batch %d (%d per rank)×%d", c.Batch, c.Micro(), c.Accum))
		} else {
			r.Out = io.Discard
		}
		if err := r.resume(p.Steps); err != nil {
			return err
		}
		if err := r.train(p.Name, nil); err != nil {
			return err
		}
		rk.Trained() // the training peaks; then the loss's all-reduce (over MPI this process holds one rank)
		sum, err := parallel.AllSumFloat64(rk.Comm, rk.Dev, r.Loss)
		if err != nil {
			return err
		}
		final[rk.Comm.Rank()] = sum / float64(rk.Comm.Size())
		if c.Save != "" { // before Unshard: under stage 3 each rank writes its shard, never the gathered model
			if err := r.save(c.Save, r.End); err != nil {
				return err
			}
			fmt.Fprintln(r.Out, "saved", c.Save+shardsNote(c.Save, c.Ranks))
		}
		if err := r.ddp.Unshard(); err != nil { // stage 3: every rank gathers the model for rank 0's evaluation
			return err
		}
		if rk.Comm.Rank() != 0 {
			return nil
		}
		rep.Seconds, r.Trained = time.Since(began).Seconds(), rk.Dev.Stats()
		ev, err = p.Evaluate(r)
		trained, skipped = r.Trained, r.skipped
		return err
	})
	if err != nil {
		return nil, err
	}
	if Follower(ranks) {
		return rep, nil // an mpirun rank other than 0: rank 0 reports
	}
	rep.Eval, rep.Extra = ev.Value, ev.Extra
	FinishRanks(out, rep, ranks, final, trained, rep.Steps, c.Batch, skipped)
	c.reportActivationHosts(out, rep)
	result(out, rep, ev, rep.Steps)
	return rep, c.writeReport(rep)
}

// FinishRanks completes the report of a data-parallel run of steps steps
// of batch samples, as rank 0 sees it: the final loss is the mean of the
// last losses (final, by rank) of this process's ranks (each over its part
// of the batch, or already the mean over every rank: trainRanks all-reduces
// it, so that over MPI too the final loss is the global batch's), peak_bytes
// are rank 0's training peaks (trained), and extra holds skipped_steps,
// ranks (every rank's peaks) and host_ranks (with offload). It prints
// trained's memory summary and the table of the ranks' peaks to out.
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
	names := make([]string, len(ranks))
	for i, r := range ranks {
		names[i] = r.Dev.Name()
	}
	fmt.Fprint(out, rankTable(names, dev, host))
}

// shardsNote tells where the other ranks' shards of the snapshot path
// are.
func shardsNote(path string, ranks int) string {
	switch ranks {
	case 1:
		return ""
	case 2:
		return " (rank 0's shard; rank 1's is " + ShardPath(path, 1, 2) + ")"
	}
	return fmt.Sprintf(" (rank 0's shard; ranks 1…%d's are %s … %s)", ranks-1, ShardPath(path, 1, ranks), ShardPath(path, ranks-1, ranks))
}
