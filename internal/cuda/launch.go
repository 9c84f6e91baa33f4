package cuda

import (
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// MaxParams and MaxParamBytes bound a kernel's parameters.
const (
	MaxParams     = 32
	MaxParamBytes = 2048
)

// ParamBlock is a reusable, pinned kernel parameter block: the void**
// array cuLaunchKernel takes and the value cells it points into. The driver
// copies the values at launch, so one block serves every launch of a
// thread. Make it with NewParamBlock and Free it when done.
type ParamBlock struct {
	ptrs  [MaxParams]unsafe.Pointer
	cells [MaxParamBytes / 8]uint64
	pin   runtime.Pinner
}

// NewParamBlock returns a pinned parameter block.
func NewParamBlock() *ParamBlock {
	b := new(ParamBlock)
	b.pin.Pin(b)
	for i := range b.ptrs {
		b.ptrs[i] = unsafe.Pointer(&b.cells[0])
	}
	return b
}

// Free unpins the block.
func (b *ParamBlock) Free() { b.pin.Unpin() }

// Set copies the encoded parameter bytes (each parameter starting at
// offs[i], 8-byte aligned) into the block.
func (b *ParamBlock) Set(buf []byte, offs []uint16) {
	cells := unsafe.Slice((*byte)(unsafe.Pointer(&b.cells[0])), MaxParamBytes)
	copy(cells, buf)
	for i, o := range offs {
		b.ptrs[i] = unsafe.Pointer(&cells[o])
	}
}

// Launch queues kernel f on stream s with the block's parameters.
func (d *Driver) Launch(f Function, grid, block [3]uint32, shared uint32, s Stream, p *ParamBlock) error {
	r, _, _ := purego.SyscallN(d.cuLaunchKernel, uintptr(f),
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(shared), uintptr(s), uintptr(unsafe.Pointer(&p.ptrs[0])), 0)
	if r == 0 {
		return nil
	}
	return d.check("cuLaunchKernel", r)
}
