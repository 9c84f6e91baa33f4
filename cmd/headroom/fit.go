package main

import (
	"fmt"
	"github.com/headroom-ml/headroom/train"
	"io"
	"time"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/plan"
)

const fitSynopsis = `fit --model NAME --capacity SIZE [--batch TARGET] [--seq S] [--image N] [--ranks N --zero Z] [--json] [--measure]

Finds, for each combination of techniques (autocast, 16-bit parameters,
accumulation, checkpointing), the largest batch whose training step fits the
capacity, on meta devices, and recommends the cheapest whose target batch
(default: the model's batch per rank, times --ranks) fits: the answers are
steps that ran (each largest batch fits and the next does not; the target
batch is run itself). --measure runs the same search for real on cpu
devices of that capacity (bisecting on out-of-memory), printing each
technique as it finishes, and says whether it agrees; it allocates up to
the capacity on this machine, so it accepts at most 4GiB.`

// maxMeasure is the largest capacity --measure accepts.
const maxMeasure = 4 << 30

func cmdFit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fit")
	var m modelFlags
	m.register(fs, false)
	capacity := fs.String("capacity", "", "the capacity of each device, e.g. 24GiB or 80GB (required)")
	measure := fs.Bool("measure", false, "also run the search for real on cpu devices and compare (capacity ≤ 4GiB)")
	pos, err := parse(fs, fitSynopsis, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return train.Usagef("unexpected arguments %q", pos)
	}
	if *capacity == "" {
		return train.Usagef("--capacity is required, e.g. --capacity 24GiB")
	}
	m.capacity = *capacity
	target := m.batch
	if target < 0 {
		return train.Usagef("--batch %d: want a positive target batch", target)
	}
	m.batch = 0 // the default batch, for the checks; fit chooses the batch
	c, err := m.config()
	if err != nil {
		return err
	}
	capBytes := c.Capacity
	c.Capacity = 0
	if *measure && capBytes > maxMeasure {
		return train.Usagef("--measure runs every technique for real on this machine: --capacity %s is above %s", device.FormatBytes(capBytes), device.FormatBytes(maxMeasure))
	}
	pred, err := plan.Fit(c, capBytes, target)
	if err != nil {
		return err
	}
	out := struct {
		*plan.FitResult
		Measured *plan.FitResult `json:"measured,omitempty"`
		Agrees   *bool           `json:"agrees,omitempty"`
	}{FitResult: pred}
	if *measure {
		fmt.Fprintf(stderr, "measuring on cpu devices of %s, technique by technique…\n", device.FormatBytes(capBytes))
		began := time.Now()
		meas, err := plan.FitMeasured(c, capBytes, target, nil, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "measured in %.0f s\n", time.Since(began).Seconds())
		agrees := len(meas.Options) == len(pred.Options)
		for i := range pred.Options {
			agrees = agrees && pred.Options[i] == meas.Options[i]
		}
		out.Measured, out.Agrees = meas, &agrees
	}
	if m.json {
		return writeJSON(stdout, out)
	}
	fmt.Fprint(stdout, pred.String())
	if out.Measured != nil {
		fmt.Fprintln(stdout, "\nmeasured on cpu devices:")
		fmt.Fprintf(stdout, "  %-48s %10s %10s %14s %14s %12s\n", "technique", "predicted", "measured", "predicted peak", "measured peak", "target fits")
		for i, o := range pred.Options {
			mo := out.Measured.Options[i]
			mark := "agrees"
			if o != mo {
				mark = "DIFFERS"
			}
			fmt.Fprintf(stdout, "  %-48s %10d %10d %14d %14d %12s  %s\n", o.Technique, o.MaxBatch, mo.MaxBatch, o.Peak, mo.Peak,
				fmt.Sprintf("%v/%v", o.TargetFits, mo.TargetFits), mark)
		}
		if *out.Agrees {
			fmt.Fprintln(stdout, "the measurement agrees with the prediction for every technique")
		} else {
			fmt.Fprintln(stdout, "the measurement differs from the prediction")
		}
	}
	return nil
}
