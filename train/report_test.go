package train_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/train"
)

// busyStats runs a device through what a training run does to it, retags
// and a failed allocation included, and returns its statistics.
func busyStats(tb testing.TB) device.Stats {
	tb.Helper()
	dev := meta.New(0, device.Options{Capacity: 64 << 20})
	w := dev.MustAlloc(3000, device.Label{Tag: device.Parameter, Op: "init"})
	g := dev.MustAlloc(3000, device.Label{Tag: device.Gradient, Op: "backward"})
	a := dev.MustAlloc(5<<20, device.Label{Tag: device.Activation, Op: "conv2d"})
	x := dev.MustAlloc(700, device.Label{Tag: device.Workspace, Op: "matmul"})
	x.Retag(device.Optimizer)
	if _, err := dev.Alloc(1<<30, device.Label{Tag: device.Activation, Op: "huge"}); err == nil {
		tb.Fatal("a 1 GiB allocation fit in 64 MiB")
	}
	a.Release()
	dev.ResetPeak()
	b := dev.MustAlloc(1<<20, device.Label{Tag: device.Activation, Op: "relu"})
	b.Release()
	dev.EmptyCache()
	st := dev.Stats()
	for _, blk := range []*device.Block{w, g, x} {
		blk.Release()
	}
	if err := dev.Close(); err != nil {
		tb.Fatal(err)
	}
	return st
}

// goodReport is a report as an example writes it, with real statistics.
func goodReport(tb testing.TB) *train.Report {
	st := busyStats(tb)
	return &train.Report{Example: "resnet", Model: "small", Params: 750, Steps: 3, FinalLoss: 2.25, Eval: 0.5,
		EvalMetric: "test_accuracy", SamplesPerSec: 100, Seconds: 1.5, PeakBytes: train.Peaks(st), CapacityBytes: 64 << 20,
		Flags: map[string]string{"amp": "bf16"}, Stats: st, Kernels: "go"}
}

func reportJSON(tb testing.TB, r *train.Report) []byte {
	tb.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// ReadReport reads what Write wrote, and refuses numbers no run can
// produce with an error naming the field and the value.
func TestReadReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	good := goodReport(t)
	if err := good.Write(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	back, err := train.ReadReport(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("a report as Write wrote it: %v", err)
	}
	if !reflect.DeepEqual(back, good) {
		t.Errorf("read back %+v, want %+v", back, good)
	}
	for _, c := range []struct {
		edit func(r *train.Report)
		want string
	}{
		{func(r *train.Report) { r.Params = -1 }, "params is -1, want ≥ 0"},
		{func(r *train.Report) { r.Seconds = -2.5 }, "seconds is -2.5"},
		{func(r *train.Report) { r.PeakBytes.Activation = -7 }, "peak_bytes: activation is -7"},
		{func(r *train.Report) { r.PeakBytes.Gradient = r.PeakBytes.Total + 1 }, "peak_bytes: gradient is"},
		{func(r *train.Report) { r.PeakBytes.Total += 1 << 30 }, "above the 1055276 bytes of the tags' peaks together"},
		{func(r *train.Report) { r.Stats.OOMs = -1 }, "stats: ooms is -1"},
		{func(r *train.Report) { r.Stats.Requested.Current = r.Stats.Requested.Peak + 1 }, "stats: requested: current"},
		{func(r *train.Report) { r.Stats.Reserved.Freed-- }, "stats: reserved: allocated"},
		{func(r *train.Report) { r.Stats.Allocated.Peak = r.Stats.Allocated.Allocated + 8 }, "stats: allocated: peak"},
		{func(r *train.Report) { r.Stats.ByTag[device.Workspace].Frees = 99 }, "stats: by_tag.workspace: 99 frees of"},
		{func(r *train.Report) { o := &r.Stats.ByTag[device.Other]; o.Current, o.Peak, o.Allocated = 5, 5, 5 },
			"the tags' current bytes add up to 6705, not requested.current 6700"},
		{func(r *train.Report) { r.Stats.AtPeak[device.Parameter]-- }, "at_peak adds up to"},
		{func(r *train.Report) { r.Stats.AtPeak[device.Other] = 1 }, "at_peak.other is 1, want 0 to its own peak 0"},
		{func(r *train.Report) { r.Stats.LargestFree = r.Stats.Reserved.Current }, "stats: largest_free"},
		{func(r *train.Report) {
			r.Stats.Reserved.Current, r.Stats.Reserved.Freed = 0, r.Stats.Reserved.Allocated
		},
			"stats: current bytes: requested 6700, allocated"},
	} {
		r := goodReport(t)
		c.edit(r)
		_, err := train.ReadReport(bytes.NewReader(reportJSON(t, r)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
			continue
		}
		t.Logf("%v", err)
	}
	bad := strings.Replace(string(b), `"workspace": {`, `"weights": {`, 1)
	if _, err := train.ReadReport(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), `unknown tag "weights"`) {
		t.Errorf("a report with an unknown tag: %v", err)
	}
	if _, err := train.ReadReport(strings.NewReader(`{"steps": "three"}`)); err == nil {
		t.Error("a report with a string for a number was read")
	}
}

// FuzzReadReport reads arbitrary JSON as a report: ReadReport never
// panics, and what it accepts has no negative number but the loss and the
// evaluation, and reads back the same after writing.
func FuzzReadReport(f *testing.F) {
	good := reportJSON(f, goodReport(f))
	f.Add(good)
	f.Add([]byte(`{"peak_bytes":{"total":-1},"stats":{"ooms":-1}}`))
	f.Add([]byte(`{"stats":{"by_tag":{"weights":{}}}}`))
	f.Add([]byte(`{"stats":{"requested":{"current":5,"peak":5,"allocated":5}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := train.ReadReport(bytes.NewReader(b))
		if err != nil {
			if r != nil {
				t.Fatalf("a report and an error: %v", err)
			}
			return
		}
		if path, v := negative(reflect.ValueOf(*r), ""); path != "" {
			t.Fatalf("accepted a report with %s = %v", path, v)
		}
		again, err := train.ReadReport(bytes.NewReader(reportJSON(t, r)))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("the accepted report does not read back the same: %v", err)
		}
	})
}

// negative returns the path and value of the first negative number in v,
// outside the fields that may be negative (final_loss, eval, extra).
func negative(v reflect.Value, path string) (string, any) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if name == "FinalLoss" || name == "Eval" || name == "Extra" {
				continue
			}
			if p, x := negative(v.Field(i), path+"."+name); p != "" {
				return p, x
			}
		}
	case reflect.Array, reflect.Slice:
		for i := range v.Len() {
			if p, x := negative(v.Index(i), path); p != "" {
				return p, x
			}
		}
	case reflect.Int, reflect.Int64:
		if v.Int() < 0 {
			return path, v.Int()
		}
	case reflect.Float64:
		if v.Float() < 0 {
			return path, v.Float()
		}
	}
	return "", nil
}
