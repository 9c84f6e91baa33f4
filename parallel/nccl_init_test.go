package parallel_test

import (
	"testing"

	"github.com/headroom-ml/headroom/device/cuda"
	icuda "github.com/headroom-ml/headroom/internal/cuda"
)

// TestNCCLInitRankAtEveryStackDepth makes a one-rank communicator on the
// device's worker at stack depths that rise by one small frame at a time,
// so that the worker's stack grows (is copied) inside the binding's call at
// one of them: the communicator that ncclCommInitRank writes back must
// reach the caller at every depth. When the binding passed the address of
// a stack variable as a plain uintptr, the copy left the library writing
// into the old stack and the caller got the zero communicator, on which
// every collective is NCCL_INVALID_ARGUMENT.
func TestNCCLInitRankAtEveryStackDepth(t *testing.T) {
	dev := openGPUs(t, 1)[0]
	lib, err := icuda.LoadNCCL()
	if err != nil {
		t.Fatal(err)
	}
	for depth := range 3000 {
		id, err := lib.UniqueID()
		if err != nil {
			t.Fatal(err)
		}
		var comm icuda.Comm
		err = cuda.OnWorker(dev, func() error {
			return atDepth(depth, func() error {
				var err error
				comm, err = lib.CommInitRank(1, 0, id)
				return err
			})
		})
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		if comm == 0 {
			t.Fatalf("depth %d: ncclCommInitRank succeeded but the communicator came back 0", depth)
		}
		if err := cuda.OnWorker(dev, func() error { return lib.Destroy(comm) }); err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
	}
}

// atDepth calls f under depth more frames of its own.
//
//go:noinline
func atDepth(depth int, f func() error) error {
	if depth == 0 {
		return f()
	}
	return atDepth(depth-1, f)
}
