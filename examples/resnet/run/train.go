package run

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// Main runs the example with command-line arguments and returns the exit
// status (train.ExitCode): 0 on success, 1 on an error, 3 when memory ran
// out (with the out-of-memory explanation on stderr, never a panic trace),
// 4 when --mem-alert stopped the run, 64 for a bad flag.
func Main(args []string, stdout, stderr io.Writer) int {
	return train.Main("resnet", args, stdout, stderr, Parse, Train)
}

// Train runs the configured training and evaluation, prints progress, the
// memory summary and the result to out, writes the report and snapshot
// the flags ask for, and returns the report. With --ranks, --zero or
// --offload each rank trains its own replica on its part of every batch
// (batch-norm statistics are per rank); see train.Train.
func Train(c *Config, out io.Writer) (*train.Report, error) {
	trainSet, testSet, ds, err := loadData(c)
	if err != nil {
		return nil, err
	}
	if c.Batch/c.Accum > trainSet.N {
		return nil, train.Usagef("--batch %d: want at most the training set's %d images in a micro-batch", c.Batch, trainSet.N)
	}
	// An epoch is as many steps of --batch images as the training set holds.
	steps, err := c.TotalSteps(trainSet.N / (c.Batch / c.Accum) / c.Accum)
	if err != nil {
		return nil, err
	}
	return train.Train(&c.Common, out, &train.Program[*replica]{
		Name: "resnet", Model: c.Model, Title: c.Model, Data: ds.name, Metric: "test_accuracy", Steps: steps,
		Schedule: optim.CosineWarmup{Base: c.LR, Warmup: min(100, steps/20), Total: steps},
		New:      newReplica(c, trainSet, ds),
		Evaluate: evaluation(c, out, testSet, ds),
	})
}

// replica is a ResNet on one device with its loader, which yields the same
// global batches on every rank; rank r trains on images
// [r·per, (r+1)·per) of each micro-batch.
type replica struct {
	c      *Config
	dev    *device.Device
	model  *nn.ResNet
	b      *nn.Builder // the model's (deferred under --zero 3)
	loader *data.Loader
	pdt    dtype.DType // the parameters' (and inputs') dtype
	shape  []int       // the rank's micro-batch (per, C, H, W)
	rank   int
}

// newReplica returns the Program's New: a ResNet for images like set's.
func newReplica(c *Config, set *data.Images, ds dataset) func(*device.Device, dtype.DType, int) (*replica, error) {
	return func(dev *device.Device, pdt dtype.DType, rank int) (*replica, error) {
		loader, err := data.NewLoader(set, data.LoaderConfig{
			Batch: c.Batch / c.Accum, Shuffle: true, Seed: c.Seed, DropLast: true, Mean: ds.mean, Std: ds.std, Crop: ds.crop, Flip: ds.flip,
		})
		if err != nil {
			return nil, err
		}
		b := c.ModelBuilder(dev, pdt, c.Seed)
		model, err := buildModel(c, b, set)
		if err != nil {
			return nil, err
		}
		if model.RunBlocks, _, err = c.RunBlocks(); err != nil {
			nn.Release(model)
			return nil, err
		}
		return &replica{c: c, dev: dev, model: model, b: b, loader: loader, pdt: pdt, shape: []int{c.Micro(), set.C, set.H, set.W}, rank: rank}, nil
	}
}

func (r *replica) Module() nn.Module { return r.model }

// BlockFLOPs is the forward convolution FLOPs of the stem and of each
// block on the rank's micro-batch (train.BlockFLOPs, for
// --activation-budget).
func (r *replica) BlockFLOPs() []int64 {
	return r.model.BlockFLOPs(r.shape[0], r.shape[2], r.shape[3])
}

// Builder is the builder that made the model (train.Built).
func (r *replica) Builder() *nn.Builder { return r.b }

// Optimizer is the flags' (Config.newOptimizer): by default SGD with
// Nesterov momentum and weight decay.
func (r *replica) Optimizer(d *parallel.DDP) (optim.Optimizer, error) {
	return r.c.newOptimizer(r.model.Params(), d)
}

// sgdConfig is the SGD of the flags at learning rate lr.
func sgdConfig(c *Config, lr float64) optim.SGDConfig {
	return optim.SGDConfig{LR: lr, Momentum: c.Momentum, Nesterov: c.Momentum > 0, WeightDecay: c.WeightDecay, MasterWeights: c.AMPParams}
}

// Forward returns the cross-entropy of the rank's part of the next batch.
func (r *replica) Forward(s *autograd.Scope, _ int) *autograd.Tensor {
	x, y := next(r.loader)
	per, img := r.shape[0], r.shape[1]*r.shape[2]*r.shape[3]
	xs := s.FromFloat32s(r.dev, r.shape, x[r.rank*per*img:(r.rank+1)*per*img])
	if r.pdt != dtype.F32 {
		xs = xs.Cast(r.pdt)
	}
	return autograd.CrossEntropy(r.model.Forward(xs), s.FromInt64s(r.dev, []int{per}, y[r.rank*per:(r.rank+1)*per]), autograd.CEOptions{})
}

// SaveState stores the loader's position and generators.
func (r *replica) SaveState(snap *train.Snapshot) (err error) {
	snap.Extra, err = json.Marshal(r.loader.State())
	return err
}

// LoadState restores the loader's state.
func (r *replica) LoadState(snap *train.Snapshot) error {
	var ls data.LoaderState
	if err := json.Unmarshal(snap.Extra, &ls); err != nil {
		return fmt.Errorf("loader state: %w", err)
	}
	return r.loader.SetState(ls)
}

// evaluation returns the Program's Evaluate: --prune and its fine-tuning,
// then the test accuracy, of the INT8 model with --quantize.
func evaluation(c *Config, out io.Writer, testSet *data.Images, ds dataset) func(*train.Run[*replica]) (train.Eval, error) {
	return func(r *train.Run[*replica]) (ev train.Eval, err error) {
		ev.Extra = map[string]any{"dataset": ds.name}
		if c.Prune > 0 {
			pr, err := pruneAndFineTune(c, out, r, testSet, ds)
			if err != nil {
				return ev, err
			}
			r.Loss, r.Trained, ev.Extra["prune"] = pr.loss, r.Dev.Stats(), pr // the fine-tune's peaks
		}
		if c.Quantize != "" {
			q, err := quantizeAndEvaluate(c, out, r, testSet, ds)
			if err != nil {
				return ev, err
			}
			ev.Value, r.Trained, ev.Extra["quantize"] = q.Accuracy, r.Dev.Stats(), q // the INT8 model's peaks
		} else if ev.Value, err = evaluate(c, r.Dev, r.R.model, testSet, ds, r.R.pdt); err != nil {
			return ev, err
		}
		ev.Line = fmt.Sprintf("test accuracy %.2f%% on %d images", 100*ev.Value, evalCount(c, testSet))
		return ev, nil
	}
}

// next returns the next batch, starting a new epoch when one ends.
func next(l *data.Loader) ([]float32, []int64) {
	x, y, ok := l.Next()
	if !ok {
		x, y, _ = l.Next()
	}
	return x, y
}
