package cuda

import (
	"errors"
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// Staging: host↔device copies go through stagingBuffers pinned host
// buffers of stagingBytes each, in chunks, on the compute stream (one
// stream for kernels and copies, so a copy is ordered with the kernels
// around it and no event between streams is needed). The buffers are host
// memory the allocator does not count: stagingBuffers·stagingBytes per
// device, allocated at Open and freed at Close.
const (
	stagingBuffers = 2
	stagingBytes   = 4 << 20
)

// staging is the pinned buffers, each with the event of its last copy.
type staging struct {
	buf [stagingBuffers][]byte
	ev  [stagingBuffers]cuda.Event
}

func newStaging(drv *cuda.Driver) (*staging, error) {
	s := &staging{}
	for i := range s.buf {
		b, err := drv.MemAllocHost(stagingBytes)
		if err != nil {
			s.free(drv)
			return nil, err
		}
		s.buf[i] = b
		if s.ev[i], err = drv.EventCreate(2); err != nil {
			s.free(drv)
			return nil, err
		}
	}
	return s, nil
}

func (s *staging) free(drv *cuda.Driver) error {
	var errs []error
	for i := range s.buf {
		if s.buf[i] != nil {
			errs = append(errs, drv.MemFreeHost(s.buf[i]))
			s.buf[i] = nil
		}
		if s.ev[i] != 0 {
			errs = append(errs, drv.EventDestroy(s.ev[i]))
			s.ev[i] = 0
		}
	}
	return errors.Join(errs...)
}

// StagingBytes is the pinned host memory each cuda device holds for
// copies (outside the allocator's accounting).
const StagingBytes = stagingBuffers * stagingBytes

// span checks a contiguous operand against a host buffer and returns its
// device address and byte length.
func (g *gpu) span(op string, o device.Operand, host int) (cuda.DevPtr, int) {
	if !o.Contiguous() {
		g.raise(op, fmt.Errorf("operand of shape %v strides %v is not contiguous", o.Shape, o.Strides))
	}
	n := o.Len() * o.DType.Size()
	if n != host {
		g.raise(op, fmt.Errorf("operand holds %d bytes (%d %s), host buffer %d", n, o.Len(), o.DType, host))
	}
	if n == 0 {
		return 0, 0
	}
	return cuda.DevPtr(o.Block.Ptr() + uintptr(o.Off*o.DType.Size())), n
}

// Write copies host bytes into dst through the staging buffers. It
// returns when src has been copied into them; the last chunks may still
// be in flight on the stream, ordered before every later op.
func (k *kern) Write(dst device.Operand, src []byte) {
	g := k.g
	g.check()
	p, n := g.span("write", dst, len(src))
	if n == 0 {
		return
	}
	err := g.do(func() error {
		s := g.stage
		for c, off := 0, 0; off < n; c, off = c+1, off+stagingBytes {
			i := c % stagingBuffers
			if err := g.drv.EventSync(s.ev[i]); err != nil {
				return err
			}
			m := copy(s.buf[i], src[off:min(n, off+stagingBytes)])
			if err := g.drv.CopyHtoD(p+cuda.DevPtr(off), s.buf[i][:m], g.stream); err != nil {
				return err
			}
			if err := g.drv.EventRecord(s.ev[i], g.stream); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		g.raise("write", err)
	}
}

// Read copies src into host bytes, after every queued op: it synchronises,
// and raises the error of earlier queued work.
func (k *kern) Read(dst []byte, src device.Operand) {
	g := k.g
	g.check()
	p, n := g.span("read", src, len(dst))
	err := g.do(func() error {
		s := g.stage
		for off := 0; off < n; off += stagingBytes {
			m := min(n-off, stagingBytes)
			if err := g.drv.CopyDtoH(s.buf[0][:m], p+cuda.DevPtr(off), g.stream); err != nil {
				return err
			}
			if err := g.drv.StreamSync(g.stream); err != nil {
				return err
			}
			copy(dst[off:], s.buf[0][:m])
		}
		if n == 0 {
			return g.drv.StreamSync(g.stream)
		}
		return nil
	})
	g.check()
	if err != nil {
		g.raise("read", err)
	}
}
