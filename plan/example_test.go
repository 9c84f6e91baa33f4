package plan_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/plan"
)

// Predict GPT-2 small's training memory at batch 4, sequence 1024, plain
// and with √n activation checkpointing, without running it.
func ExamplePredict() {
	for _, c := range []plan.Config{
		{Model: "gpt2", Batch: 4},
		{Model: "gpt2", Batch: 4, Checkpoint: -1}, // ⌈√12⌉ = 4 segments
	} {
		p, err := plan.Predict(c)
		if err != nil {
			fmt.Println(err)
			return
		}
		r := p.Ranks[0]
		fmt.Printf("%s, %d parameters, checkpoint %d:\n", p.Model, p.Params, c.Checkpoint)
		fmt.Println("  model state:", r.ModelState, "bytes =", r.Parameter, "+", r.Gradient, "+", r.Optimizer)
		fmt.Println("  activation: ", r.Activation, "bytes")
		fmt.Println("  peak:       ", r.Total, "bytes")
	}
	// Output:
	// gpt2, 124439808 parameters, checkpoint 0:
	//   model state: 1991036928 bytes = 497759232 + 497759232 + 995518464
	//   activation:  3418750980 bytes
	//   peak:        5902395396 bytes
	// gpt2, 124439808 parameters, checkpoint -1:
	//   model state: 1991036928 bytes = 497759232 + 497759232 + 995518464
	//   activation:  1528954884 bytes
	//   peak:        4012599300 bytes
}

// ZeRO partitions the model state over data-parallel ranks: each rank of
// four holds less as the stage rises.
func ExamplePredict_zero() {
	for stage := range 4 {
		p, err := plan.Predict(plan.Config{Model: "gpt2", Batch: 4, Seq: 128, Ranks: 4, Zero: stage})
		if err != nil {
			fmt.Println(err)
			return
		}
		r := p.Ranks[0]
		fmt.Printf("ZeRO-%d: model state %d bytes per rank (%s)\n", stage, r.ModelState, device.FormatBytes(r.ModelState))
	}
	// Output:
	// ZeRO-0: model state 1991036928 bytes per rank (1.85 GiB)
	// ZeRO-1: model state 1244398080 bytes per rank (1.16 GiB)
	// ZeRO-2: model state 871078656 bytes per rank (830.73 MiB)
	// ZeRO-3: model state 497759232 bytes per rank (474.70 MiB)
}

// Fit finds the largest batch each technique allows in a capacity and
// recommends the cheapest whose target batch fits.
func ExampleFit() {
	r, err := plan.Fit(plan.Config{Model: "transformer", Seq: 8}, 16<<20, 64)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range r.Options {
		fmt.Printf("%-48s max batch %d\n", o.Technique, o.MaxBatch)
	}
	if b := r.Best; b != nil {
		fmt.Printf("best: %s, batch %d fits with a peak of %d bytes\n", b.Technique, b.TargetBatch, b.TargetPeak)
	}
	// Output:
	// plain                                            max batch 20
	// amp bf16                                         max batch 28
	// amp bf16 + amp-params                            max batch 31
	// accum 2                                          max batch 20
	// accum 4                                          max batch 40
	// offload activations                              max batch 23
	// selective                                        max batch 24
	// activation budget                                max batch 37
	// checkpoint √n                                    max batch 27
	// amp bf16 + checkpoint √n                         max batch 39
	// amp bf16 + amp-params + checkpoint √n            max batch 46
	// amp bf16 + amp-params + checkpoint √n + accum 4  max batch 144
	// adamw8bit                                        max batch 36
	// step in backward                                 max batch 20
	// adamw8bit + step in backward + checkpoint √n     max batch 64
	// qlora 16                                         max batch 44
	// best: adamw8bit + step in backward + checkpoint √n, batch 64 fits with a peak of 16757412 bytes
}

// FitSplit arranges 4 ranks for the transformer example's model: with a
// capacity that holds the model on every rank, data parallelism alone
// (no model-parallel ranks) is the choice.
func ExampleFitSplit() {
	r, err := plan.FitSplit(plan.Config{Model: "transformer", Seq: 8, Ranks: 4}, 64<<20, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d layouts; use tp %d pp %d dp %d for batch %d\n", len(r.Layouts), r.Best.TP, r.Best.PP, r.Best.DP, r.Best.TargetBatch)
	// Output:
	// 6 layouts; use tp 1 pp 1 dp 4 for batch 128
}
