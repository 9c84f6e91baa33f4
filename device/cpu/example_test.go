package cpu_test

import (
	"errors"
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// Allocate labelled host memory on a cpu device with a capacity, use it, and
// free it: the bytes leave the accounting as soon as the last reference is
// released, and EmptyCache returns the cached segment to the system.
func ExampleNew() {
	d := cpu.New(0, device.Options{Capacity: 4 << 20})
	b, err := d.Alloc(1000, device.Label{Tag: device.Activation, Scope: "fc1", Op: "relu"})
	if err != nil {
		panic(err)
	}
	p := b.Bytes() // real host memory, exactly the bytes asked for
	p[0], p[999] = 1, 2
	fmt.Println(d.Name(), "capacity", device.FormatBytes(d.Capacity()))
	fmt.Println("bytes:", len(p), p[0], p[999])

	st := d.Stats()
	fmt.Println("requested:", st.Requested.Current, "activation:", st.Tag(device.Activation).Current)
	fmt.Println("allocated:", st.Allocated.Current, "reserved:", st.Reserved.Current)
	fmt.Println("live:", d.Live())

	b.Release() // the last reference: freed at once
	st = d.Stats()
	fmt.Println("after Release: requested", st.Requested.Current, "peak", st.Requested.Peak, "cached", st.CachedFree())
	d.EmptyCache()
	fmt.Println("after EmptyCache: reserved", d.Stats().Reserved.Current)
	// Output:
	// cpu:0 capacity 4.00 MiB
	// bytes: 1000 1 2
	// requested: 1000 activation: 1000
	// allocated: 1024 reserved: 2097152
	// live: [{activation fc1/relu 1000 1}]
	// after Release: requested 0 peak 1000 cached 2097152
	// after EmptyCache: reserved 0
}

// A request beyond the capacity fails with an *device.OOMError, matched with
// errors.As, that carries the numbers behind the failure. The device is
// unchanged and usable afterwards.
func ExampleNew_outOfMemory() {
	d := cpu.New(0, device.Options{Capacity: 4 << 20})
	w, err := d.Alloc(3<<20, device.Label{Tag: device.Parameter, Scope: "fc1", Op: "linear"})
	if err != nil {
		panic(err)
	}
	defer w.Release()

	_, err = d.Alloc(2<<20, device.Label{Tag: device.Activation, Scope: "fc1", Op: "relu"})
	var oom *device.OOMError
	if errors.As(err, &oom) {
		fmt.Println("device:", oom.Device)
		fmt.Println("requested:", oom.Requested, "bytes for", oom.Label.Tag, "("+oom.Label.Creator()+")")
		fmt.Println("capacity:", oom.Capacity, "reserved:", oom.Reserved, "allocated:", oom.Allocated)
		fmt.Println("largest tag:", oom.LargestTag())
	}
	st := d.Stats()
	fmt.Println("OOMs:", st.OOMs, "requested now:", st.Requested.Current)
	// Output:
	// device: cpu:0
	// requested: 2097152 bytes for activation (fc1/relu)
	// capacity: 4194304 reserved: 3145728 allocated: 3145728
	// largest tag: parameter
	// OOMs: 1 requested now: 3145728
}
