package conformance

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
	"github.com/headroom-ml/headroom/dtype"
)

// Options configures Run. The zero value checks a computing device in
// every float dtype.
type Options struct {
	// NoData says the device holds no data (meta): only the accounting,
	// OOM and leak checks run, against a cpu device's accounting.
	NoData bool
	// DTypes are the dtypes to check; default the comma-separated list in
	// the environment variable HEADROOM_CONFORMANCE_DTYPES (for example
	// "f32", as scripts/test.sh sets for its race and noasm runs), else
	// F32, F64, BF16, F16. The OOM check runs in the first of them only.
	DTypes []dtype.DType
}

// DefaultDTypes are the dtypes Run checks when Options.DTypes is empty.
var DefaultDTypes = []dtype.DType{dtype.F32, dtype.F64, dtype.BF16, dtype.F16}

// Run runs the suite on the devices open returns, called once per case and
// dtype. open may return a fresh device each time or the same one (a
// device that is slow to open): each step starts from an empty device
// resets its peaks and counts from there, and must end holding what it
// held when it started (a device's own blocks, such as a cuBLAS workspace).
func Run(t *testing.T, open func(t testing.TB) *device.Device, o Options) {
	dts, err := dtypes(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			for i, dt := range dts {
				t.Run(dt.String(), func(t *testing.T) { checkCase(t, open(t), c, dt, o, i == 0) })
			}
		})
	}
	for _, c := range optimCases() {
		t.Run(c.name, func(t *testing.T) {
			for _, dt := range dts {
				t.Run(dt.String(), func(t *testing.T) { checkOptim(t, open(t), c, dt, o) })
			}
		})
	}
}

// dtypes returns the dtypes Run checks.
func dtypes(o Options) ([]dtype.DType, error) {
	if len(o.DTypes) > 0 {
		return o.DTypes, nil
	}
	env := os.Getenv("HEADROOM_CONFORMANCE_DTYPES")
	if env == "" {
		return DefaultDTypes, nil
	}
	var dts []dtype.DType
	for _, name := range strings.Split(env, ",") {
		dt, err := dtype.Parse(strings.TrimSpace(name))
		if err != nil || !dt.IsFloat() {
			return nil, fmt.Errorf("HEADROOM_CONFORMANCE_DTYPES=%q: %q is not a float dtype (want f64, f32, bf16 or f16, comma-separated)", env, name)
		}
		dts = append(dts, dt)
	}
	return dts, nil
}

// checkCase runs one case in one dtype on dev and checks it.
func checkCase(t *testing.T, dev *device.Device, c opCase, dt dtype.DType, o Options, oom bool) {
	leafDT, auto := dt, dtype.Invalid
	if dt.IsLowPrecision() && c.autocast {
		leafDT, auto = dtype.F32, dt
	}
	d := makeData(c, dt)
	// The accounting run reads nothing: copying a strided output to the
	// host takes a temporary on a computing device only.
	got := step(dev, c, leafDT, auto, d, false)
	if got.err != nil {
		t.Fatalf("%s %s on %s: %v", c.name, dt, dev, got.err)
	}
	checkLeaks(t, dev, got)
	ref := accountingRef(dev)
	defer ref.Close()
	sameAccounting(t, dev, ref, got, step(ref, c, leafDT, auto, d, false))
	if !o.NoData {
		vals := step(dev, c, leafDT, auto, d, true)
		if vals.err != nil {
			t.Fatalf("%s %s on %s, reading the values: %v", c.name, dt, dev, vals.err)
		}
		checkLeaks(t, dev, vals)
		want := step(cpu.New(0, device.Options{}), c, dtype.F64, dtype.Invalid, d, true)
		compare(t, c, dt, vals, want)
	}
	if oom {
		checkOOM(t, dev, got.base.Allocated.Current+got.marks[markDone].Allocated.Peak, func() result { return step(dev, c, leafDT, auto, d, false) })
	}
}

// accountingRef is the device whose accounting dev's must equal: meta for
// a computing device, cpu for one without data.
func accountingRef(dev *device.Device) *device.Device {
	if dev.Kernels() == nil {
		return cpu.New(0, device.Options{})
	}
	return meta.New(0, device.Options{})
}

// compare checks got's output and gradients against want's (cpu, F64).
func compare(t *testing.T, c opCase, dt dtype.DType, got, want result) {
	t.Helper()
	tol := Tolerances[dt]
	if got.isInt {
		tol = Tolerance{}
	}
	if m := mismatch(got.out, want.out, tol); m != "" {
		t.Errorf("%s %s forward: output %s", c.name, dt, m)
	}
	for i := range c.ins {
		g, w := got.grads[i], want.grads[i]
		if g == nil && w == nil {
			continue
		}
		if g == nil || w == nil {
			t.Errorf("%s %s backward: input %d has a gradient on one device only (got %v, cpu F64 %v)", c.name, dt, i, g != nil, w != nil)
			continue
		}
		if m := mismatch(g, w, tol); m != "" {
			t.Errorf("%s %s backward: gradient of input %d %v: %s", c.name, dt, i, c.ins[i].shape, m)
		}
	}
}

// sameAccounting checks that the requested bytes, per tag and in all,
// current and peak, and the allocated (rounded) bytes of dev equal ref's
// at every mark of the step.
func sameAccounting(t *testing.T, dev, ref *device.Device, got, want result) {
	t.Helper()
	if want.err != nil {
		t.Fatalf("the same step on %s: %v", ref, want.err)
	}
	for m := range numMarks {
		if d := diffStats(got.marks[m], want.marks[m]); d != "" {
			t.Errorf("accounting at %q: %s has %s; %s has the other", markNames[m], dev, d, ref)
			return
		}
	}
}

// diffStats names the first counter in which a and b differ, or "".
func diffStats(a, b device.Stats) string {
	if a.Requested != b.Requested {
		return fmt.Sprintf("Requested %+v, not %+v", a.Requested, b.Requested)
	}
	if a.Allocated != b.Allocated {
		return fmt.Sprintf("Allocated %+v, not %+v", a.Allocated, b.Allocated)
	}
	for tag := range device.NumTags {
		if a.ByTag[tag] != b.ByTag[tag] {
			return fmt.Sprintf("%s %+v, not %+v", device.Tag(tag), a.ByTag[tag], b.ByTag[tag])
		}
	}
	if a.AtPeak != b.AtPeak {
		return fmt.Sprintf("AtPeak %v, not %v", a.AtPeak, b.AtPeak)
	}
	return ""
}

// checkLeaks checks that a finished step left on the device only what it
// held before (Device.Leaks is empty on a device with no blocks of its own).
func checkLeaks(t *testing.T, dev *device.Device, r result) {
	t.Helper()
	if l := dev.Live(); !reflect.DeepEqual(l, r.before) {
		t.Errorf("%s holds %+v after the step and its inputs were released, %+v before", dev, l, r.before)
	}
	if len(r.hostLeaks) != 0 {
		t.Errorf("the host device holds %+v after the step", r.hostLeaks)
	}
}

// checkOOM runs the step again with the capacity one byte below its peak
// (it must fail with *device.OOMError and leave the device holding what it
// held before the step) and at the peak (it must succeed).
func checkOOM(t *testing.T, dev *device.Device, peak int64, run func() result) {
	t.Helper()
	defer dev.SetCapacity(0)
	dev.EmptyCache()
	dev.SetCapacity(peak - 1)
	r := run()
	var oom *device.OOMError
	switch {
	case !r.inputs:
		t.Errorf("capacity %d (peak - 1): the inputs alone did not fit: %v", peak-1, r.err)
	case !errors.As(r.err, &oom):
		t.Errorf("capacity %d (peak - 1): step returned %v, want *device.OOMError", peak-1, r.err)
	case !reflect.DeepEqual(r.after, r.held):
		t.Errorf("capacity %d (peak - 1): after the failed step %s holds %+v, before it %+v", peak-1, dev, r.after, r.held)
	}
	checkLeaks(t, dev, r)
	dev.EmptyCache()
	dev.SetCapacity(peak)
	if r = run(); r.err != nil {
		t.Errorf("capacity %d (the peak): step failed: %v", peak, r.err)
	}
	checkLeaks(t, dev, r)
}
