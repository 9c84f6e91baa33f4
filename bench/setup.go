package bench

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	rrun "github.com/headroom-ml/headroom/examples/resnet/run"
	trun "github.com/headroom-ml/headroom/examples/transformer/run"
	"github.com/headroom-ml/headroom/plan"
	"github.com/headroom-ml/headroom/train"
)

// size is a mode's batches, training steps and evaluation sizes.
type size struct {
	resnetBatch, gptBatch, steps, evalImages, evalBatches, planSteps int
}

func sizeOf(m Mode) size {
	switch m {
	case Quick:
		return size{32, 8, 8, 256, 2, 2}
	case Tiny:
		return size{4, 4, 2, 16, 1, 2}
	}
	return size{128, 32, 100, 10000, 20, 3}
}

// setups returns the models c benches, each with its plain configuration
// and the flags of its loss run.
func (c Config) setups() ([]Setup, error) {
	if c.Mode < Full || c.Mode > Tiny {
		return nil, fmt.Errorf("bench: mode %d: want Full, Quick or Tiny", c.Mode)
	}
	z := sizeOf(c.Mode)
	steps := z.steps
	switch {
	case c.Steps > 0:
		steps = c.Steps
	case c.Steps < 0:
		steps = 0
	}
	dev := c.device()
	models := c.Models
	if len(models) == 0 && len(c.Speed) == 0 {
		models = []string{"resnet", "transformer"}
	}
	var out []Setup
	for _, m := range models {
		switch m {
		case "resnet":
			// The resnet example's default model on MNIST is the planner's
			// "small": SmallResNet, 1×28×28, 10 classes, SGD with momentum.
			args := []string{"--device=" + dev, "--model=small", "--dataset=mnist", "--seed=1", "--eval-samples=" + strconv.Itoa(z.evalImages)}
			if c.MNIST != "" {
				args = append(args, "--data="+c.MNIST)
			}
			out = append(out, Setup{Name: m, Plan: plan.Config{Model: "small", Batch: z.resnetBatch, Steps: z.planSteps, Device: dev},
				Steps: steps, Args: args, Train: trainWith(rrun.Parse, rrun.Train)})
		case "transformer":
			// The transformer example's default model is the planner's
			// "transformer": 4 layers × 128, 4 heads, context 64, bytes.
			corpus := c.Corpus
			if corpus == "" {
				root, err := goRoot()
				if err != nil {
					return nil, err
				}
				corpus = filepath.Join(root, "src", "fmt")
			}
			args := []string{"--device=" + dev, "--data=" + corpus, "--seed=1", "--context=64", "--layers=4", "--width=128", "--heads=4",
				"--eval-batches=" + strconv.Itoa(z.evalBatches), "--sample=0"}
			out = append(out, Setup{Name: m, Plan: plan.Config{Model: "transformer", Batch: z.gptBatch, Seq: 64, Steps: z.planSteps, Device: dev},
				Steps: steps, Args: args, Train: trainWith(trun.Parse, trun.Train)})
		default:
			return nil, fmt.Errorf("bench: unknown model %q (want resnet or transformer)", m)
		}
	}
	return out, nil
}

// trainWith adapts an example's Parse and Train: the run's output is
// discarded, its report returned.
func trainWith[C any](parse func([]string, io.Writer) (C, error), run func(C, io.Writer) (*train.Report, error)) func([]string) (*train.Report, error) {
	return func(args []string) (*train.Report, error) {
		var errb strings.Builder
		c, err := parse(args, &errb)
		if err != nil {
			return nil, fmt.Errorf("%w %s", err, strings.TrimSpace(errb.String()))
		}
		return run(c, io.Discard)
	}
}

// goRoot returns the Go installation's root.
func goRoot() (string, error) {
	if r := runtime.GOROOT(); r != "" {
		return r, nil
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("bench: finding the Go source tree for the corpus (go env GOROOT): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
