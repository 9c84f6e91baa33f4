package meta

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
)

// New returns the meta device meta:index. It allocates exactly as a cpu
// device does — same rounding, segments, caching and capacity — but holds no
// data and computes nothing, so a model far larger than the machine can run
// its real training step on it and report its exact peak memory.
func New(index int, o device.Options) *device.Device {
	if index < 0 {
		panic(fmt.Sprintf("meta.New: negative index %d", index))
	}
	return device.New(fmt.Sprintf("meta:%d", index), backend{}, o)
}

type backend struct{}

func (backend) Kind() string                             { return "meta" }
func (backend) Alloc(n int64) (device.Memory, error)     { return device.Memory{}, nil }
func (backend) Commit(device.Memory, int64, int64) error { return nil }
func (backend) Decommit(device.Memory, int64, int64)     {}
func (backend) Free(device.Memory)                       {}
func (backend) Kernels() device.Kernels                  { return nil }
