package emu

import (
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLaunchesUnderGC runs many launches while another goroutine allocates,
// so garbage collections and preemption signals land while fibers run.
func TestLaunchesUnderGC(t *testing.T) {
	d := setup(t)
	f := module(t, d, "rowsum_f32")[0]
	const rows, n, iters = 4, 300, 300
	var stop atomic.Bool
	done := make(chan int)
	go func() {
		var keep [][]byte
		for i := 0; !stop.Load(); i++ {
			keep = append(keep, make([]byte, 1<<10))
			if len(keep) > 1000 {
				keep = nil
			}
		}
		done <- len(keep)
	}()
	defer func() { stop.Store(true); <-done }()
	dx, dout := alloc[float32](t, d, rows*n), alloc[float32](t, d, rows)
	x := make([]float32, rows*n)
	for it := 0; it < iters; it++ {
		for i := range x {
			x[i] = float32((i+it)%9 - 4)
		}
		upload(t, d, dx, x)
		check(t, "cuLaunchKernel", launch(d, f, dim(2, 1, 1), dim(96, 1, 1), 0, 0, dx, dout, int32(rows), int32(n)))
		got := download[float32](t, d, dout, rows)
		for r := 0; r < rows; r++ {
			var want float32
			for i := 0; i < n; i++ {
				want += x[r*n+i]
			}
			if got[r] != want {
				t.Fatalf("iteration %d: rowsum_f32 row %d = %v, want %v", it, r, got[r], want)
			}
		}
	}
}

// TestBadAccessFaults shows that a kernel touching device memory that is
// not mapped (or no longer), writing past the end of a cuMemAlloc_v2 block,
// or indexing a __shared__ array out of its bounds, kills the process, as an
// illegal address would stop the device: each case runs in a child process.
func TestBadAccessFaults(t *testing.T) {
	if c := os.Getenv("HEADROOM_EMU_FAULT_CHILD"); c != "" {
		faultChild(t, c)
		return
	}
	for _, c := range []string{"unmapped", "overrun", "overindex"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBadAccessFaults$", "-test.count=1")
		cmd.Env = append(os.Environ(), "HEADROOM_EMU_FAULT_CHILD="+c)
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		want := "SIGSEGV"
		if c == "overindex" {
			want = "index 32 out of bounds for type 'float [32]'"
		}
		if !ok || ee.Success() || !strings.Contains(string(out), want) {
			t.Fatalf("%s: err %v, output:\n%s\nwant the child to die with %q", c, err, out, want)
		}
		t.Logf("%s: the child died as expected: %v", c, err)
	}
}

func faultChild(t *testing.T, mode string) {
	d := setup(t)
	fill := module(t, d, "fill_f64")[0]
	var p uintptr
	n := int64(512)
	if mode == "overindex" {
		f := module(t, d, "overindex")[0]
		out := alloc[float32](t, d, 1)
		check(t, "cuLaunchKernel in bounds", launch(d, f, dim(1, 1, 1), dim(32, 1, 1), 0, 0, out, int32(31)))
		check(t, "cuCtxSynchronize in bounds", d.CtxSynchronize())
		check(t, "cuLaunchKernel", launch(d, f, dim(1, 1, 1), dim(32, 1, 1), 0, 0, out, int32(32)))
		d.CtxSynchronize()
		t.Fatal("overindex: the out-of-bounds index went unseen")
	}
	if mode == "unmapped" {
		check(t, "cuMemAddressReserve", d.AddressReserve(&p, 2<<20, 0, 0, 0)) // nothing mapped there
	} else {
		check(t, "cuMemAlloc_v2", d.MemAlloc(&p, uintptr(n*8)))
		check(t, "cuLaunchKernel in bounds", launch(d, fill, dim(1, 1, 1), dim(32, 1, 1), 0, 0, p, n, 1.0))
		check(t, "cuCtxSynchronize in bounds", d.CtxSynchronize())
		n++ // one double past the end
	}
	check(t, "cuLaunchKernel", launch(d, fill, dim(1, 1, 1), dim(32, 1, 1), 0, 0, p, n, 1.0))
	d.CtxSynchronize()
	t.Fatalf("%s: the kernel's store did not fault", mode)
}
