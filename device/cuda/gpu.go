package cuda

import (
	"errors"
	"runtime"
	"sync"

	"github.com/headroom-ml/headroom/internal/cuda"
)

// gpu is one open cuda device: its worker goroutine, locked to an OS
// thread that holds the device's primary context, and what lives in that
// context (stream, modules, cuBLAS, staging buffers, VMM segments).
type gpu struct {
	name  string
	index int
	drv   *cuda.Driver
	dev   int // driver handle
	arch  string
	model string // the driver's name of the device
	tf32  bool   // F32 GEMMs may use TF32 (TF32() at Open)

	q     chan task
	calls sync.Pool

	errMu sync.Mutex
	err   error // sticky: the first failure of queued work, raised at the next call

	life sync.RWMutex // held to read done and send on q; written to end the worker
	done bool         // the worker has ended
	be   *backend

	// Owned by the worker goroutine:
	ctx     cuda.Context
	stream  cuda.Stream
	params  *cuda.ParamBlock
	mods    *modules
	blas    *cuda.Handle
	stage   *staging
	vmm     bool
	gran    int64
	workers sync.WaitGroup
}

// task is one unit of the worker's queue: a launch, or a function.
type task struct {
	launch *call
	f      func()
}

// start runs the worker and sets the context up on it.
func (g *gpu) start() error {
	g.q = make(chan task, 1024)
	g.calls.New = func() any { return new(call) }
	g.workers.Add(1)
	ready := make(chan error, 1)
	go g.run(ready)
	return <-ready
}

// run is the worker: it locks its OS thread, makes the primary context
// current and executes the queue in order until the queue is closed.
func (g *gpu) run(ready chan<- error) {
	defer g.workers.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := g.setup(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for t := range g.q {
		if t.launch != nil {
			g.runLaunch(t.launch)
			continue
		}
		t.f()
	}
}

// setup makes the primary context current and creates the stream and the
// launch parameter block.
func (g *gpu) setup() error {
	ctx, err := g.drv.RetainPrimary(g.dev)
	if err != nil {
		return err
	}
	g.ctx = ctx
	if err := g.drv.SetCurrent(ctx); err != nil {
		g.drv.ReleasePrimary(g.dev)
		return err
	}
	if g.stream, err = g.drv.StreamCreate(1); err != nil {
		g.drv.ReleasePrimary(g.dev)
		return err
	}
	g.params = cuda.NewParamBlock()
	return nil
}

// runLaunch resolves the kernel and launches it; a failure is kept as the
// sticky error.
func (g *gpu) runLaunch(c *call) {
	f, err := g.mods.function(g, c.fn)
	if err == nil {
		g.params.Set(c.buf[:], c.offs[:c.n])
		err = g.drv.Launch(f, c.l.Grid, c.l.Block, c.l.Shared, g.stream, g.params)
	}
	if err != nil {
		g.fail(&opError{c.fn, err})
	}
	g.calls.Put(c)
}

// opError is a failure of one queued op, kept until it is raised.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// fail keeps the first failure of queued work.
func (g *gpu) fail(err error) {
	g.errMu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.errMu.Unlock()
}

// check raises the sticky error of earlier queued work, once, and refuses
// work on a closed device.
func (g *gpu) check() {
	g.errMu.Lock()
	err := g.err
	g.err = nil
	g.errMu.Unlock()
	if err != nil {
		var oe *opError
		if errors.As(err, &oe) {
			g.raise(oe.op, oe.err)
		}
		g.raise("queued work", err)
	}
}

// submit queues a task; it reports false when the device is closed.
func (g *gpu) submit(t task) bool {
	g.life.RLock()
	defer g.life.RUnlock()
	if g.done {
		return false
	}
	g.q <- t
	return true
}

// do runs f on the worker and waits for it.
func (g *gpu) do(f func() error) error {
	ch := make(chan error, 1)
	if !g.submit(task{f: func() { ch <- f() }}) {
		return ErrClosed
	}
	return <-ch
}

// sync waits for every queued op to finish on the device and returns the
// sticky error, if any (without clearing it).
func (g *gpu) sync() error {
	return g.do(func() error { return g.drv.StreamSync(g.stream) })
}
