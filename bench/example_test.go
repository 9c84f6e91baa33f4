package bench_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/bench"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/plan"
)

// The example programs' flags for a planned step: the bench trains the
// same step on real data with them.
func ExampleFlags() {
	c := plan.Config{Model: "transformer", Batch: 32, AMP: dtype.BF16, AMPParams: true, Checkpoint: -1, Accum: 4}
	fmt.Println(bench.Flags(c))
	// Output:
	// [--batch=32 --amp=bf16 --amp-params --checkpoint --accum=4]
}

// A timeline's peak and each tag's traffic.
func ExampleSummarize() {
	dev := meta.New(0, device.Options{})
	dev.StartTimeline()
	w := dev.MustAlloc(4096, device.Label{Tag: device.Parameter, Op: "init", Scope: "fc"})
	x := dev.MustAlloc(1024, device.Label{Tag: device.Activation, Op: "matmul", Scope: "fc", Phase: "forward"})
	x.Release()
	tl := dev.StopTimeline()
	w.Release()

	s := bench.Summarize(tl, 0)
	fmt.Println(s.PeakBytes, "bytes at event", s.PeakEvent, "by", tl.Events[s.PeakEvent].Op)
	for _, t := range s.ByTag {
		fmt.Printf("%s: %d allocated, %d freed\n", t.Tag, t.Allocated, t.Freed)
	}
	// Output:
	// 5120 bytes at event 2 by matmul
	// parameter: 4096 allocated, 0 freed
	// activation: 1024 allocated, 1024 freed
}
