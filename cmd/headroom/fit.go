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
       [--device cpu|cuda [--cuda-major 9]]
   fit --split --model GPT --capacity SIZE --ranks N [--batch TARGET] [--zero Z] [plan's technique flags] [--json]

Finds, for each combination of techniques (autocast, 16-bit parameters,
accumulation, checkpointing), the largest batch whose training step fits the
capacity, on meta devices, and recommends the cheapest whose target batch
(default: the model's batch per rank, times --ranks) fits: the answers are
steps that ran (each largest batch fits and the next does not; the target
batch is run itself). --device cuda searches for a GPU (its devices hold
cuBLAS's workspace from the start, see plan). --measure runs the same
search for real on devices of that capacity (bisecting on out-of-memory),
printing each technique as it finishes, and says whether it agrees: on
cpu devices it allocates up to the capacity on this machine, so it
accepts at most 4GiB; with --device cuda on cuda:0…cuda:N-1 (N the
ranks), up to the memory the driver reports free on cuda:0.

--split chooses --tp and --pp instead: it plans every layout of the --ranks
ranks (tp × pp × dp = ranks; heads divisible by tp, pp ≤ layers) at the
target global batch (default: the model's batch × ranks × accum) with the
techniques given, and picks the fewest model-parallel ranks tp × pp that
fit, then the lowest worst-rank peak, then the smaller tp, and searches the
chosen layout's largest batch (plan.FitSplit).`

// maxMeasure is the largest capacity --measure accepts on cpu devices.
const maxMeasure = 4 << 30

func cmdFit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fit")
	var m modelFlags
	m.register(fs, true)
	split := fs.Bool("split", false, "choose --tp and --pp: search the tensor × pipeline × data layouts of --ranks with the techniques given (--amp, --checkpoint, --accum, --zero…)")
	measure := fs.Bool("measure", false, "also run the search for real on --device's devices and compare (on cpu: capacity ≤ 4GiB; on cuda: ≤ the GPU's free memory)")
	pos, err := parse(fs, fitSynopsis, normalize(args), stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return train.Usagef("unexpected arguments %q", pos)
	}
	if m.capacity == "" {
		return train.Usagef("--capacity is required, e.g. --capacity 24GiB")
	}
	if *split {
		return fitSplit(fs, m, *measure, stdout)
	}
	if given := givenFlags(fs, splitOnlyFlags); len(given) > 0 {
		return train.Usagef("--%s: fit chooses the techniques itself (with --split it keeps those given and chooses the layout)", given[0])
	}
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
	if *measure {
		if err := measurable(c.Device, capBytes); err != nil {
			return err
		}
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
		fmt.Fprintf(stderr, "measuring on %s devices of %s, technique by technique…\n", c.Device, device.FormatBytes(capBytes))
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
		fmt.Fprintf(stdout, "\nmeasured on %s devices:\n", c.Device)
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

// measurable checks that --measure can run on devices of kind kind with
// capacity bytes each: on cpu at most maxMeasure; on cuda a GPU must open
// (a *train.DeviceError otherwise: no driver, no GPU) and have that much
// free.
func measurable(kind string, capacity int64) error {
	if kind != plan.CUDA {
		if capacity > maxMeasure {
			return train.Usagef("--measure runs every technique for real on this machine: --capacity %s is above %s", device.FormatBytes(capacity), device.FormatBytes(maxMeasure))
		}
		return nil
	}
	dev, err := train.OpenDevice("cuda", device.Options{})
	if err != nil {
		return err
	}
	free := dev.Capacity() // the driver's free memory when it opened
	if err := dev.Close(); err != nil {
		return err
	}
	if capacity > free {
		return train.Usagef("--measure --device cuda: --capacity %s is above the %s free on %s", device.FormatBytes(capacity), device.FormatBytes(free), dev.Name())
	}
	return nil
}
