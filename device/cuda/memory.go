package cuda

import (
	"fmt"
	"sync"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// backend is the device.Backend of one cuda device. Its memory calls run
// on the worker (the context is per thread) and wait for it.
type backend struct {
	g *gpu

	mu       sync.Mutex
	segs     map[uintptr]*vseg // VMM segments by base address
	segments int               // segments obtained and not yet freed (both kinds)
	mapped   int64             // physical bytes mapped into VMM segments
	closing  bool              // Device.Close was called: the context goes when the last segment does
	closed   bool
	ws       *device.Block // the cuBLAS workspace
	comm     *comm         // the communication stream and its waiter (comm.go), nil until a collective
}

// vseg is one VMM segment: a reserved address range and, per granule, the
// committed bytes that lie in it and the physical handle mapped there.
type vseg struct {
	base      cuda.DevPtr
	size      int64
	committed []int64
	handle    []uint64
}

func (b *backend) Kind() string { return "cuda" }

func (b *backend) Kernels() device.Kernels { return &kern{b.g} }

// Alloc reserves address space for a segment (n rounded up to the
// granularity) when VMM is on, and allocates it whole otherwise.
func (b *backend) Alloc(n int64) (device.Memory, error) {
	g := b.g
	var m device.Memory
	err := g.do(func() error {
		if !g.vmm {
			p, err := g.drv.MemAlloc(n)
			m.Ptr = uintptr(p)
			return err
		}
		size := (n + g.gran - 1) / g.gran * g.gran
		p, err := g.drv.AddressReserve(size)
		if err != nil {
			return err
		}
		k := size / g.gran
		b.mu.Lock()
		b.segs[uintptr(p)] = &vseg{base: p, size: size, committed: make([]int64, k), handle: make([]uint64, k)}
		b.mu.Unlock()
		m.Ptr = uintptr(p)
		return nil
	})
	if err != nil {
		return device.Memory{}, fmt.Errorf("%s: reserving %s: %w", g.name, device.FormatBytes(n), err)
	}
	b.mu.Lock()
	b.segments++
	b.mu.Unlock()
	return m, nil
}

// Commit maps physical memory under every granule of the range that had
// no committed byte yet, counting committed bytes per granule. On failure
// nothing stays mapped or counted.
func (b *backend) Commit(m device.Memory, off, n int64) error {
	g := b.g
	if !g.vmm || n == 0 {
		return nil
	}
	s := b.seg(m)
	err := g.do(func() error { return b.commit(s, off, n) })
	if err != nil {
		return fmt.Errorf("%s: committing %s: %w", g.name, device.FormatBytes(n), err)
	}
	return nil
}

// commit runs on the worker.
func (b *backend) commit(s *vseg, off, n int64) error {
	g := b.g
	first, last := off/g.gran, (off+n-1)/g.gran
	for i := first; i <= last; i++ {
		if s.committed[i] > 0 {
			continue
		}
		h, err := g.drv.MapNew(g.dev, s.base+cuda.DevPtr(i*g.gran), g.gran)
		if err != nil {
			for j := first; j < i; j++ {
				if s.committed[j] == 0 && s.handle[j] != 0 {
					b.unmap(s, j)
				}
			}
			return err
		}
		s.handle[i] = h
		b.addMapped(g.gran)
	}
	for i := first; i <= last; i++ {
		s.committed[i] += overlap(i*g.gran, g.gran, off, n)
	}
	return nil
}

// overlap returns the bytes of [a, a+an) that lie in [b, b+bn).
func overlap(a, an, b, bn int64) int64 {
	lo, hi := max(a, b), min(a+an, b+bn)
	return max(0, hi-lo)
}

func (b *backend) addMapped(n int64) {
	b.mu.Lock()
	b.mapped += n
	b.mu.Unlock()
}

// unmap gives granule i's physical memory back.
func (b *backend) unmap(s *vseg, i int64) {
	g := b.g
	if err := g.drv.Unmap(s.base+cuda.DevPtr(i*g.gran), g.gran, s.handle[i]); err != nil {
		g.fail(&opError{"decommit", err})
	}
	s.handle[i] = 0
	b.addMapped(-g.gran)
}

// Decommit uncounts the range's bytes and unmaps each granule left with
// none, after the stream's queued work (which may still use the memory of
// blocks freed on the host) has finished.
func (b *backend) Decommit(m device.Memory, off, n int64) {
	g := b.g
	if !g.vmm || n == 0 {
		return
	}
	s := b.seg(m)
	_ = g.do(func() error {
		first, last := off/g.gran, (off+n-1)/g.gran
		synced := false
		for i := first; i <= last; i++ {
			s.committed[i] -= overlap(i*g.gran, g.gran, off, n)
			if s.committed[i] < 0 {
				panic(fmt.Sprintf("%s: decommit of uncommitted bytes in granule %d", g.name, i))
			}
			if s.committed[i] == 0 && s.handle[i] != 0 {
				if !synced {
					b.syncForFree()
					synced = true
				}
				b.unmap(s, i)
			}
		}
		return nil
	})
}

// syncForFree waits for the stream before memory goes back to the driver.
func (b *backend) syncForFree() {
	if err := b.g.drv.StreamSync(b.g.stream); err != nil {
		b.g.fail(&opError{"synchronize", err})
	}
}

// Free returns a segment: unmaps what is still mapped and frees the range
// (VMM), or frees the allocation. After Device.Close, the last segment's
// Free tears the context down.
func (b *backend) Free(m device.Memory) {
	g := b.g
	_ = g.do(func() error {
		b.syncForFree()
		if !g.vmm {
			if err := g.drv.MemFree(cuda.DevPtr(m.Ptr)); err != nil {
				g.fail(&opError{"free", err})
			}
			return nil
		}
		s := b.seg(m)
		for i := range s.handle {
			if s.handle[i] != 0 {
				b.unmap(s, int64(i))
			}
		}
		if err := g.drv.AddressFree(s.base, s.size); err != nil {
			g.fail(&opError{"free", err})
		}
		b.mu.Lock()
		delete(b.segs, m.Ptr)
		b.mu.Unlock()
		return nil
	})
	b.mu.Lock()
	b.segments--
	last := b.closing && b.segments == 0
	b.mu.Unlock()
	if last {
		b.teardown()
	}
}

func (b *backend) seg(m device.Memory) *vseg {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.segs[m.Ptr]
	if s == nil {
		panic(fmt.Sprintf("%s: unknown segment %#x", b.g.name, m.Ptr))
	}
	return s
}

// MemInfo returns the driver's free and total bytes of the device.
func (b *backend) MemInfo() (free, total int64) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return 0, 0
	}
	_ = b.g.do(func() error {
		var err error
		free, total, err = b.g.drv.MemInfo()
		return err
	})
	return free, total
}

// Mapped returns the physical bytes mapped into VMM segments (granule
// rounded): what the driver holds for the allocator's committed bytes.
func (b *backend) Mapped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mapped
}
