package cpu

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/internal/kernels"
)

// New returns the logical cpu device cpu:index with its own accounting.
// Several logical devices may exist at once (cpu:0, cpu:1, …), each with an
// optional capacity, so that one machine can stand in for a small GPU or for
// several ranks. Devices share the machine's cores.
func New(index int, o device.Options) *device.Device {
	if index < 0 {
		panic(fmt.Sprintf("cpu.New: negative index %d", index))
	}
	return device.New(fmt.Sprintf("cpu:%d", index), backend{}, o)
}

// backend obtains segments from the operating system outside Go's heap, so
// that freeing them (EmptyCache) returns the memory at once, never at the
// garbage collector's convenience.
type backend struct{}

func (backend) Kind() string { return "cpu" }

// KernelPath names the instruction-set path the cpu device's kernels take
// on this machine: "go" (no assembly: another architecture, or the noasm
// build tag), "avx2", "avx512" or "avx512+vnni", with "+bf16" when
// bfloat16 GEMMs run on VDPBF16PS (AVX512_BF16). Benchmarks record it, so
// that figures from different machines are read for what ran.
func KernelPath() string { return kernels.CPU.Path() }

func (backend) Alloc(n int64) (device.Memory, error) {
	b, err := osAlloc(n)
	if err != nil {
		return device.Memory{}, fmt.Errorf("cpu: reserving %s: %w", device.FormatBytes(n), err)
	}
	return device.Memory{Host: b}, nil
}

func (backend) Free(m device.Memory) { osFree(m.Host) }

// Commit needs nothing: the operating system backs a mapping's pages when
// they are first touched.
func (backend) Commit(device.Memory, int64, int64) error { return nil }

// Decommit gives back the whole pages inside the range; the pages it
// shares with neighbouring blocks stay.
func (backend) Decommit(m device.Memory, off, n int64) { osDecommit(m.Host, off, n) }

func (backend) Kernels() device.Kernels { return kern{} }
