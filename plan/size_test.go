package plan

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
)

// inputBytes sums the bytes of the step's inputs in a timeline: the
// blocks the planner makes in scope "input".
func inputBytes(tl *device.Timeline) (n int64) {
	for _, e := range tl.Events {
		if e.Kind == "alloc" && e.Scope == "input" {
			n += e.Bytes
		}
	}
	return n
}

// TestHugeBatchOnMeta plans steps whose inputs alone are terabytes: on
// meta the inputs are device blocks without data like every other tensor,
// so the Go heap stays small, and the planned input is the closed-form
// size of the batch.
func TestHugeBatchOnMeta(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want int64 // the inputs' bytes: images (F32) and labels (I64), or token indices and targets (I64)
	}{
		{Config{Model: "resnet18", Batch: 10_000_000}, 10_000_000*3*224*224*4 + 10_000_000*8},
		{Config{Model: "resnet18", Batch: 32, Image: 100_000}, 32*3*100_000*100_000*4 + 32*8},
		{Config{Model: "gpt2", Batch: 1_000_000_000, Seq: 1024}, 2 * 1_000_000_000 * 1024 * 8},
	} {
		tc.c.Timeline, tc.c.Steps = true, 1
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := Predict(tc.c)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%+v: %v", tc.c, err)
		}
		// Everything the Go program allocated while planning, freed or not.
		const bound = 256 << 20
		if heap := after.TotalAlloc - before.TotalAlloc; heap > bound {
			t.Errorf("%s batch %d: planning allocated %d bytes of Go heap, want under %d (the input is %d bytes)", tc.c.Model, tc.c.Batch, heap, bound, tc.want)
		}
		if got := inputBytes(p.Timeline); got != tc.want {
			t.Errorf("%s batch %d: the planned input is %d bytes, want %d", tc.c.Model, tc.c.Batch, got, tc.want)
		}
		t.Logf("%s batch %d image %d: input %s, peak %s, Go heap allocated %d KiB", tc.c.Model, tc.c.Batch, p.Image,
			device.FormatBytes(tc.want), device.FormatBytes(p.Ranks[0].Total), (after.TotalAlloc-before.TotalAlloc)>>10)
	}
}

// TestSizesOutOfRange: sizes whose tensors would overflow the byte counts
// are refused before anything runs, naming the setting; a step whose
// total passes MaxBytes is an error, not a prediction.
func TestSizesOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		c     Config
		field string
	}{
		{Config{Model: "resnet18", Image: 3_000_000_000}, "image"}, // 9·10^18 pixels: image² alone overflows int64
		{Config{Model: "resnet18", Batch: 1 << 40}, "batch"},
		{Config{Model: "gpt2", Batch: 1 << 45}, "batch"},
	} {
		_, err := Predict(tc.c)
		var se *SizeError
		if !errors.As(err, &se) || se.Field != tc.field {
			t.Errorf("%+v: error %v, want a *SizeError for %s", tc.c, err, tc.field)
		}
		if tc.c.Validate() == nil {
			t.Errorf("%+v: Validate accepts it", tc.c)
		}
		t.Logf("%v", err)
	}
	// Each tensor fits, their sum does not.
	_, err := Predict(Config{Model: "gpt2", Batch: 1 << 33, Steps: 1})
	if err == nil || errors.As(err, new(*device.OOMError)) {
		t.Errorf("gpt2 batch 2^33: error %v, want one saying the step passes what a plan counts", err)
	}
	t.Logf("%v", err)
}

// TestLargestTensorBound checks the bounds checkSizes relies on, for
// every model the planner knows: the bytes one more sample adds to any
// single block of the step — matched event by event between batches 2
// and 3, which run the same ops — are at most largestPerSample. A
// convolution's workspace is left out: it grows with the first samples
// (a tile for each of up to kernels.ConvSlots() units, a copy of a small dw
// per chunk of samples) and then not at all, so it never comes near
// MaxBytes (device.Conv2d.ForwardWorkspace).
func TestLargestTensorBound(t *testing.T) {
	for _, name := range Names() {
		m, _ := Lookup(name)
		images := []int{0}
		if m.Kind != "gpt" {
			images = []int{0, 1, 33}
		}
		for _, img := range images {
			var sizes [2][]int64
			var c Config
			for i, b := range []int{2, 3} {
				c = Config{Model: name, Batch: b, Image: img, Seq: min(m.GPT.Context, 256), Steps: 1, Timeline: true}
				p, err := Predict(c)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for _, e := range p.Timeline.Events {
					if e.Kind == "alloc" && !convWorkspace(e) {
						sizes[i] = append(sizes[i], e.Bytes)
					}
				}
			}
			if len(sizes[0]) != len(sizes[1]) {
				t.Fatalf("%s: %d and %d allocations at batches 2 and 3", name, len(sizes[0]), len(sizes[1]))
			}
			var most int64
			for k := range sizes[0] {
				most = max(most, sizes[1][k]-sizes[0][k])
			}
			c, _, _ = c.resolved()
			if bound := largestPerSample(c, m); float64(most) > bound {
				t.Errorf("%s image %d: one sample adds %d bytes to a block, above the bound %.0f", name, c.Image, most, bound)
			} else {
				t.Logf("%-11s image %3d seq %4d: a sample adds at most %d bytes to a block (bound %.0f)", name, c.Image, c.Seq, most, bound)
			}
		}
	}
}

// convWorkspace reports whether e is a convolution's workspace.
func convWorkspace(e device.Event) bool {
	return e.Tag == device.Workspace && strings.HasPrefix(e.Op, "conv2d")
}
