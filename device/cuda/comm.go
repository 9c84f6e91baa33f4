package cuda

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// comm is a device's communication side, made at its first collective: a
// second stream, the event that orders it after the compute stream (owned
// by the worker), a pool of events that mark the end of each collective,
// and the waiter, a goroutine locked to its own OS thread with the device's
// context current, which waits for those events on the host so that
// neither the caller's work on the worker nor the compute stream waits.
type comm struct {
	stream cuda.Stream
	after  cuda.Event // recorded on compute before each collective
	free   chan cuda.Event
	waits  chan wait
	done   sync.WaitGroup
}

// wait is one host wait of the waiter.
type wait struct {
	ev    cuda.Event
	reply chan error
}

// commEvents is how many collectives of a device may be in flight at once
// (callers beyond it wait for an event to come back).
const commEvents = 8

// IsCUDA reports whether dev was opened by Open (and is not closed).
func IsCUDA(dev *device.Device) bool { return backendOf(dev) != nil }

// OnWorker runs f on dev's worker goroutine, whose OS thread has the
// device's context current, after the work queued before it has been
// issued (not finished), and returns f's error. f must not call into dev's
// allocator or ops (that would wait for the worker, which is running f).
func OnWorker(dev *device.Device, f func() error) error {
	b := backendOf(dev)
	if b == nil {
		return fmt.Errorf("cuda.OnWorker: %s is not a cuda device", dev.Name())
	}
	return b.g.do(f)
}

// Collective runs one collective op on dev's communication stream and
// returns when it has finished on the device. On the worker, in order with
// the ops queued before: an event on the compute stream, the communication
// stream waits for it (so the collective reads what earlier kernels
// wrote), queue(stream) queues the collective there (an NCCL call), and an
// event on the communication stream marks its end. Then the calling
// goroutine — not the worker and not the compute stream, which go on with
// the kernels queued meanwhile — waits for that event on the host. The
// stream is made at the first call (one per device, non-blocking) and
// destroyed at Close. A failing queue is returned as is, named by op.
func Collective(dev *device.Device, op string, queue func(stream uintptr) error) error {
	b := backendOf(dev)
	if b == nil {
		return fmt.Errorf("%s: %s is not a cuda device", op, dev.Name())
	}
	g := b.g
	var ev cuda.Event
	var c *comm
	err := g.do(func() error {
		var err error
		if c, err = b.commSide(); err != nil {
			return err
		}
		ev = <-c.free
		if err := g.order(c); err != nil {
			c.free <- ev
			return err
		}
		if err := queue(uintptr(c.stream)); err != nil {
			c.free <- ev
			return err
		}
		if err := g.drv.EventRecord(ev, c.stream); err != nil {
			c.free <- ev
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s on %s: %w", op, g.name, err)
	}
	reply := make(chan error, 1)
	c.waits <- wait{ev, reply}
	err = <-reply
	c.free <- ev
	if err != nil {
		return fmt.Errorf("%s on %s: %w", op, g.name, err)
	}
	return nil
}

// order makes the communication stream's next work wait for the compute
// stream's work queued so far (on the worker).
func (g *gpu) order(c *comm) error {
	if err := g.drv.EventRecord(c.after, g.stream); err != nil {
		return err
	}
	return g.drv.StreamWaitEvent(c.stream, c.after)
}

// commSide returns the device's communication side, making it at the
// first call (on the worker).
func (b *backend) commSide() (*comm, error) {
	b.mu.Lock()
	c := b.comm
	b.mu.Unlock()
	if c != nil {
		return c, nil
	}
	g := b.g
	c = &comm{free: make(chan cuda.Event, commEvents), waits: make(chan wait)}
	var err error
	if c.stream, err = g.drv.StreamCreate(1); err != nil {
		return nil, err
	}
	evs := make([]cuda.Event, 0, commEvents+1)
	for range commEvents + 1 {
		e, err := g.drv.EventCreate(2)
		if err != nil {
			for _, e := range evs {
				g.drv.EventDestroy(e)
			}
			g.drv.StreamDestroy(c.stream)
			return nil, err
		}
		evs = append(evs, e)
	}
	c.after = evs[0]
	for _, e := range evs[1:] {
		c.free <- e
	}
	ready := make(chan error, 1)
	c.done.Add(1)
	go c.wait(g, ready)
	if err := <-ready; err != nil {
		c.destroy(g)
		return nil, err
	}
	b.mu.Lock()
	b.comm = c
	b.mu.Unlock()
	return c, nil
}

// wait is the waiter: it makes the context current on its own thread and
// synchronises each event it is sent, until waits is closed. The driver
// API is thread-safe: any thread with the context current may wait for
// an event while the worker issues work.
func (c *comm) wait(g *gpu, ready chan<- error) {
	defer c.done.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := g.drv.SetCurrent(g.ctx); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for w := range c.waits {
		w.reply <- g.drv.EventSync(w.ev)
	}
}

// destroy ends the waiter and frees the stream and events (on the worker,
// at Close, after the stream's work).
func (c *comm) destroy(g *gpu) error {
	close(c.waits)
	c.done.Wait()
	err := g.drv.StreamSync(c.stream)
	for len(c.free) > 0 {
		g.drv.EventDestroy(<-c.free)
	}
	g.drv.EventDestroy(c.after)
	if e := g.drv.StreamDestroy(c.stream); err == nil {
		err = e
	}
	return err
}

// closeComm destroys the communication side, if one was made (on the
// worker, from teardown).
func (b *backend) closeComm() error {
	b.mu.Lock()
	c := b.comm
	b.comm = nil
	b.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.destroy(b.g)
}
