package device_test

import (
	"errors"
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// Allocate a block, read the three levels of accounting, release it and
// return the cache.
func ExampleDevice_Alloc() {
	d := meta.New(0, device.Options{})
	b, err := d.Alloc(1000, device.Label{Tag: device.Parameter, Scope: "fc1", Op: "linear"})
	if err != nil {
		panic(err)
	}
	st := d.Stats()
	fmt.Println("requested:", st.Requested.Current) // exact bytes
	fmt.Println("allocated:", st.Allocated.Current) // rounded to 512 B
	fmt.Println("reserved: ", st.Reserved.Current)  // one 2 MiB segment
	fmt.Println("parameter:", st.Tag(device.Parameter).Current)

	b.Release() // the last reference: freed now
	st = d.Stats()
	fmt.Println("after Release:", st.Requested.Current, "live, peak", st.Requested.Peak, "cached", st.CachedFree())
	d.EmptyCache()
	fmt.Println("after EmptyCache:", d.Stats().Reserved.Current, "reserved")
	// Output:
	// requested: 1000
	// allocated: 1024
	// reserved:  2097152
	// parameter: 1000
	// after Release: 0 live, peak 1000 cached 2097152
	// after EmptyCache: 0 reserved
}

// An allocation beyond the capacity returns an *OOMError that explains
// where the block would go, why it cannot, and what holds the memory.
func ExampleOOMError() {
	d := meta.New(0, device.Options{Capacity: 8 << 20})
	w, _ := d.Alloc(3<<20, device.Label{Tag: device.Parameter, Scope: "fc1", Op: "linear"})
	a, _ := d.Alloc(4<<20, device.Label{Tag: device.Activation, Scope: "fc1", Op: "relu"})
	defer w.Release()
	defer a.Release()

	_, err := d.Alloc(2<<20, device.Label{Tag: device.Workspace, Scope: "fc2", Op: "matmul"})
	var oom *device.OOMError
	if errors.As(err, &oom) {
		fmt.Println("requested", device.FormatBytes(oom.Requested), "with", device.FormatBytes(oom.Capacity-oom.Reserved), "left")
		fmt.Println("largest tag:", oom.LargestTag())
		fmt.Println("reason:", oom.Reason, "in the", oom.Pool, "pool,", device.FormatBytes(oom.Short), "short")
		fmt.Println()
		fmt.Println(err)
	}
	// Output:
	// requested 2.00 MiB with 1.00 MiB left
	// largest tag: activation
	// reason: full in the large pool, 1.00 MiB short
	//
	// meta:0: out of memory: tried to allocate 2.00 MiB for workspace (fc2/matmul); capacity 8.00 MiB, 7.00 MiB allocated, 7.00 MiB reserved, 0 B reserved but unused (largest free block 0 B)
	//   largest live tag: activation 4.00 MiB (57% of allocated)
	//   live: activation      4.00 MiB in 1 block(s) from fc1/relu
	//   live: parameter       3.00 MiB in 1 block(s) from fc1/linear
	//   why: it needs a 2.00 MiB block from the large pool (blocks over 1 MiB, from 20 MiB segments under 10 MiB, else from a segment of their own), in a free 13.00 MiB chunk not backed by memory
	//   why: the live blocks occupy 7.00 MiB of the 8.00 MiB capacity, 1.00 MiB too much for this block; no cached free memory is left
	//   activation held only by the scope (saved by no node): 4.00 MiB in 1 block(s); Release it after its last use, or use an in-place op
	//     unsaved:   4.00 MiB in 1 block(s) from fc1/relu
	//   hint: EmptyCache would not help and fragmentation is not the cause: live memory must shrink by at least 1.00 MiB (or the capacity grow by as much)
	//   hint: activations are 57% of use: checkpoint segments of the model, use a smaller micro-batch with gradient accumulation, or autocast to bf16/fp16
	//   hint: parameters and gradients are 43% of use: low-precision parameters with fp32 master weights halve them; ZeRO stages 2-3, pruning or parameter sharing shrink them
}

// Summary renders the accounting as a table. Requested rows are exact
// bytes per tag; Allocated adds the rounding to 512 B; Reserved is what the
// device holds from its backend, cache included. "at peak" is what the
// memory held when Requested was highest.
func ExampleDevice_Summary() {
	d := meta.New(0, device.Options{Capacity: 1 << 30})
	w, _ := d.Alloc(3<<20, device.Label{Tag: device.Parameter})
	x, _ := d.Alloc(1536, device.Label{Tag: device.Activation})
	x.Release()
	fmt.Print(d.Summary())
	w.Release()
	// Output:
	// |===========================================================================|
	// |                  headroom memory summary, device meta:0                   |
	// |---------------------------------------------------------------------------|
	// |              capacity: 1.00 GiB   OOMs: 0   cache flushes: 0              |
	// |===========================================================================|
	// |        Metric         |  Cur Usage | Peak Usage |  Tot Alloc |  Tot Freed |
	// |---------------------------------------------------------------------------|
	// | Requested memory      |    3.0 MiB |    3.0 MiB |    3.0 MiB |    1.5 KiB |
	// |       parameter       |    3.0 MiB |    3.0 MiB |    3.0 MiB |        0 B |
	// |       gradient        |        0 B |        0 B |        0 B |        0 B |
	// |       optimizer       |        0 B |        0 B |        0 B |        0 B |
	// |       activation      |        0 B |    1.5 KiB |    1.5 KiB |    1.5 KiB |
	// |       workspace       |        0 B |        0 B |        0 B |        0 B |
	// |       communication   |        0 B |        0 B |        0 B |        0 B |
	// |       other           |        0 B |        0 B |        0 B |        0 B |
	// |---------------------------------------------------------------------------|
	// | Allocated memory      |    3.0 MiB |    3.0 MiB |    3.0 MiB |    1.5 KiB |
	// | Reserved memory       |   22.0 MiB |   22.0 MiB |   22.0 MiB |        0 B |
	// | Cached free memory    |   19.0 MiB |          - |          - |          - |
	// | Largest free block    |   17.0 MiB |          - |          - |          - |
	// |---------------------------------------------------------------------------|
	// | Allocations           |          1 |          - |          2 |          1 |
	// |       parameter       |          1 |          - |          1 |          0 |
	// |       gradient        |          0 |          - |          0 |          0 |
	// |       optimizer       |          0 |          - |          0 |          0 |
	// |       activation      |          0 |          - |          1 |          1 |
	// |       workspace       |          0 |          - |          0 |          0 |
	// |       communication   |          0 |          - |          0 |          0 |
	// |       other           |          0 |          - |          0 |          0 |
	// | Reserved segments     |          2 |          - |          2 |          0 |
	// |---------------------------------------------------------------------------|
	// |              at peak: parameter 3.0 MiB, activation 1.5 KiB               |
	// |===========================================================================|
}

// Leaks lists what a finished step still holds beyond the long-lived tags.
func ExampleDevice_Leaks() {
	d := meta.New(0, device.Options{})
	w, _ := d.Alloc(4096, device.Label{Tag: device.Parameter, Scope: "fc1", Op: "linear"})
	h, _ := d.Alloc(2048, device.Label{Tag: device.Activation, Scope: "fc1", Op: "relu"})
	fmt.Println(d.Leaks(device.Parameter, device.Gradient, device.Optimizer))
	h.Release()
	fmt.Println(d.Leaks(device.Parameter, device.Gradient, device.Optimizer))
	fmt.Println(d.Live())
	w.Release()
	// Output:
	// [{activation fc1/relu 2048 1}]
	// []
	// [{parameter fc1/linear 4096 1}]
}

// A timeline records every change of memory with its label and the running
// totals.
func ExampleDevice_StartTimeline() {
	d := meta.New(0, device.Options{})
	d.StartTimeline()
	a, _ := d.Alloc(1000, device.Label{Tag: device.Activation, Op: "relu", Phase: "forward"})
	g, _ := d.Alloc(3000, device.Label{Tag: device.Workspace, Op: "relu_grad", Phase: "backward"})
	a.Release()
	g.Release()
	d.EmptyCache()
	tl := d.StopTimeline()
	for _, e := range tl.Events {
		tag := e.Tag.String()
		if e.Kind == "segment_alloc" || e.Kind == "segment_free" {
			tag = "-" // segments belong to no tag
		}
		fmt.Printf("%-13s %8d %-10s %-9s %-8s allocated %4d reserved %d\n", e.Kind, e.Bytes, tag, e.Op, e.Phase, e.Allocated, e.Reserved)
	}
	peak, at := tl.Peak()
	fmt.Println("peak", peak, "at event", at)
	// Output:
	// segment_alloc  2097152 -                             allocated    0 reserved 2097152
	// alloc             1000 activation relu      forward  allocated 1000 reserved 2097152
	// alloc             3000 workspace  relu_grad backward allocated 4000 reserved 2097152
	// free              1000 activation relu      forward  allocated 3000 reserved 2097152
	// free              3000 workspace  relu_grad backward allocated    0 reserved 2097152
	// segment_free   2097152 -                             allocated    0 reserved 0
	// peak 4000 at event 2
}

func ExampleParseBytes() {
	for _, s := range []string{"24GiB", "1.5 GiB", "512MiB", "80GB", "4096", "64k", "lots"} {
		n, err := device.ParseBytes(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-8s = %12d = %s\n", s, n, device.FormatBytes(n))
	}
	// Output:
	// 24GiB    =  25769803776 = 24.00 GiB
	// 1.5 GiB  =   1610612736 = 1.50 GiB
	// 512MiB   =    536870912 = 512.00 MiB
	// 80GB     =  80000000000 = 74.51 GiB
	// 4096     =         4096 = 4.00 KiB
	// 64k      =        65536 = 64.00 KiB
	// device: cannot read size "lots" (want a number and a unit, e.g. 24GiB, 512MiB, 80GB)
}
