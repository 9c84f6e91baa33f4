package cuda

import (
	"errors"
	"strings"
	"testing"
)

// TestNoNCCL: a HEADROOM_LIBNCCL path that does not exist is the only one
// tried, and the error is ErrNoNCCL naming it.
func TestNoNCCL(t *testing.T) {
	t.Setenv("HEADROOM_LIBNCCL", "/nonexistent/libnccl.so.2")
	_, err := libNccl.open()
	if !errors.Is(err, ErrNoNCCL) || !strings.Contains(err.Error(), "HEADROOM_LIBNCCL=/nonexistent/libnccl.so.2") {
		t.Fatalf("got %v, want ErrNoNCCL naming the path", err)
	}
}

// TestNCCLErrorNames: NCCL's result codes are named, and an NCCL error
// matches no driver sentinel of the same number.
func TestNCCLErrorNames(t *testing.T) {
	if got := ncclResult(4); got != "NCCL_INVALID_ARGUMENT" {
		t.Errorf("ncclResult(4) = %q, want NCCL_INVALID_ARGUMENT", got)
	}
	if errors.Is(&Error{Call: "ncclAllReduce", Code: 2, Name: ncclResult(2)}, ErrOutOfMemory) {
		t.Error("NCCL's system error 2 matched CUDA's out of memory")
	}
}
