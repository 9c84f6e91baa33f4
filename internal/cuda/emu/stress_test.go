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

// TestUnmappedAccessFaults shows that a kernel touching device memory that
// is no longer mapped kills the process, as an illegal address would stop
// the device: the test runs the access in a child process.
func TestUnmappedAccessFaults(t *testing.T) {
	if os.Getenv("HEADROOM_EMU_FAULT_CHILD") == "1" {
		faultChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnmappedAccessFaults$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HEADROOM_EMU_FAULT_CHILD=1")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.Success() || !strings.Contains(string(out), "SIGSEGV") {
		t.Fatalf("a kernel writing unmapped memory: err %v, output:\n%s\nwant the child to die of SIGSEGV", err, out)
	}
	t.Logf("the child died as expected: %v", err)
}

func faultChild(t *testing.T) {
	d := setup(t)
	fill := module(t, d, "fill_f64")[0]
	var base uintptr
	check(t, "cuMemAddressReserve", d.AddressReserve(&base, 2<<20, 0, 0, 0))
	// Nothing is mapped at base: the kernel's store faults.
	check(t, "cuLaunchKernel", launch(d, fill, dim(1, 1, 1), dim(32, 1, 1), 0, 0, base, int64(32), 1.0))
	d.CtxSynchronize()
	t.Fatal("the kernel's store to unmapped memory did not fault")
}
