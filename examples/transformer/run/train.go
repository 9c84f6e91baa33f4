package run

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/lora"
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
	return train.Main("transformer", args, stdout, stderr, Parse, Train)
}

// Train runs the configured training and evaluation, prints progress, the
// memory summary, the validation loss and a generated sample to out,
// writes the report and snapshot the flags ask for, and returns the
// report. With --ranks, --zero or --offload each rank trains its own
// replica on its rows of every global batch; see train.Train.
func Train(c *Config, out io.Writer) (*train.Report, error) {
	whole, err := data.LoadText(c.Data)
	if err != nil {
		return nil, err
	}
	corpus, desc := c.corpusSlice(whole)
	trainText, valText := corpus.SplitSpread(c.ValFraction, valChunk)
	if trainText.Len() <= c.Context || valText.Len() <= c.Context {
		return nil, train.Usagef("--context %d: want less than the training text's %d bytes and the validation text's %d (%s, --val-fraction %v)",
			c.Context, trainText.Len(), valText.Len(), desc, c.ValFraction)
	}
	// An epoch is as many windows as the training text holds, in steps of --batch.
	steps, err := c.TotalSteps(trainText.Len() / (c.Batch * c.Context))
	if err != nil {
		return nil, err
	}
	schedule := optim.CosineWarmup{Base: c.LR, Min: c.LR / 10, Warmup: min(100, steps/10), Total: steps}
	if c.Split() {
		return trainSplit(c, out, desc, trainText, steps, schedule)
	}
	return train.Train(&c.Common, out, &train.Program[*replica]{
		Name: "transformer", Model: fmt.Sprintf("gpt-%dx%d", c.Layers, c.Width), Metric: "validation_loss_nats_per_byte",
		Title: fmt.Sprintf("GPT %d layers × width %d, %d heads, context %d", c.Layers, c.Width, c.Heads, c.Context) + c.loraTitle(),
		Data:  desc, Steps: steps, Clip: c.Clip,
		Schedule: schedule,
		New:      newReplica(c, trainText),
		Evaluate: evaluation(c, out, corpus, valText),
	})
}

// replica is a GPT on one device with its batch sampler, which draws the
// same global batches on every rank (the same seed); rank r trains on rows
// [r·per, (r+1)·per) of each micro-batch.
type replica struct {
	c     *Config
	dev   *device.Device
	model *nn.GPT
	lora  *lora.GPT           // the model with adapters (--lora), once the optimizer is made
	b     *nn.Builder         // the model's (deferred under --zero 3)
	gen   *autograd.Generator // dropout's
	src   *rand.PCG           // the sampler's
	rng   *rand.Rand
	text  *data.Text
	rank  int
}

// extra is the replica's part of a snapshot besides the dropout
// generator: the batch sampler's random state.
type extra struct {
	RNG []byte `json:"rng"`
}

// newReplica returns the Program's New: the GPT of the flags.
func newReplica(c *Config, text *data.Text) func(*device.Device, dtype.DType, int) (*replica, error) {
	return func(dev *device.Device, pdt dtype.DType, rank int) (*replica, error) {
		gen := autograd.NewGenerator(c.Seed + uint64(rank))
		b := c.ModelBuilder(dev, pdt, c.Seed)
		model, err := nn.NewGPT(b, "gpt", c.GPT(), gen)
		if err != nil {
			return nil, err
		}
		if model.RunBlocks, _, err = c.RunBlocks(); err != nil {
			nn.Release(model)
			return nil, err
		}
		model.FusedLoss = c.FusedLoss
		src := rand.NewPCG(c.Seed, 7)
		return &replica{c: c, dev: dev, model: model, b: b, gen: gen, src: src, rng: rand.New(src), text: text, rank: rank}, nil
	}
}

func (r *replica) Module() nn.Module { return r.layer() }

// BlockFLOPs is each block's forward matmul FLOPs on the rank's
// micro-batch (train.BlockFLOPs, for --activation-budget).
func (r *replica) BlockFLOPs() []int64 {
	return r.perBlock(nn.GPTConfig.BlockFLOPs)
}

// SelectiveFLOPs is each block's FLOPs its selective recomputation runs
// again (train.SelectiveFLOPs): a materialized attention's products.
func (r *replica) SelectiveFLOPs() []int64 {
	return r.perBlock(nn.GPTConfig.SelectiveFLOPs)
}

// perBlock returns f of the model on the rank's micro-batch, per block.
func (r *replica) perBlock(f func(nn.GPTConfig, int, int) int64) []int64 {
	all := make([]int64, r.c.Layers)
	for i := range all {
		all[i] = f(r.c.GPT(), r.c.Micro(), r.c.Context)
	}
	return all
}

// layer is the model trained: the GPT, or its adapted form with --lora.
func (r *replica) layer() nn.Layer {
	if r.lora != nil {
		return r.lora
	}
	return r.model
}

// Builder is the builder that made the model (train.Built).
func (r *replica) Builder() *nn.Builder { return r.b }

// Optimizer is the flags' AdamW (Config.newOptimizer).
func (r *replica) Optimizer(d *parallel.DDP) (optim.Optimizer, error) {
	if r.c.LoRA > 0 {
		return r.loraOptimizer()
	}
	return r.c.newOptimizer(r.model.Params(), d, r.c.AMPParams)
}

// Forward returns the next-byte cross-entropy of the rank's rows of the
// next batch.
func (r *replica) Forward(s *autograd.Scope, _ int) *autograd.Tensor {
	c := r.c
	x, y := r.text.Batch(r.rng, c.Batch/c.Accum, c.Context)
	per := c.Micro()
	lo, hi := r.rank*per*c.Context, (r.rank+1)*per*c.Context
	return lossOf(s, r.dev, r.layer(), x[lo:hi], y[lo:hi], []int{per, c.Context})
}

// SaveState stores the sampler's and the dropout generator's states.
func (r *replica) SaveState(snap *train.Snapshot) error {
	rs, err := r.src.MarshalBinary()
	if err != nil {
		return err
	}
	snap.Generators = map[string]autograd.GeneratorState{"dropout": r.gen.State()}
	snap.Extra, err = json.Marshal(extra{RNG: rs})
	return err
}

// LoadState restores them.
func (r *replica) LoadState(snap *train.Snapshot) error {
	var ex extra
	if err := json.Unmarshal(snap.Extra, &ex); err != nil {
		return err
	}
	if err := r.src.UnmarshalBinary(ex.RNG); err != nil {
		return fmt.Errorf("sampler state: %w", err)
	}
	if g, ok := snap.Generators["dropout"]; ok {
		r.gen.SetState(g)
	}
	return nil
}

// lossOf returns the mean cross-entropy of the model's next-byte
// predictions for a batch.
func lossOf(s *autograd.Scope, dev *device.Device, m nn.Layer, x, y []int64, shape []int) *autograd.Tensor {
	if g, ok := m.(interface { // *nn.GPT, *lora.GPT: fused with the head under --fused-loss
		Loss(idx, targets *autograd.Tensor) *autograd.Tensor
	}); ok {
		return g.Loss(s.FromInt64s(dev, shape, x), s.FromInt64s(dev, []int{len(y)}, y))
	}
	logits := m.Forward(s.FromInt64s(dev, shape, x))
	flat := logits.Reshape(-1, 256)
	logits.Release()
	return autograd.CrossEntropy(flat, s.FromInt64s(dev, []int{len(y)}, y), autograd.CEOptions{})
}
