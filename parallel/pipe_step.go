package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/optim"
)

// PipeBatch supplies a step's micro-batches to the stages that need them.
type PipeBatch struct {
	// Tokens returns micro-batch i's token indices (Batch, Seq), made in
	// s (Scope.FromInt64s); called on stage 0 only.
	Tokens func(s *autograd.Scope, i int) *autograd.Tensor
	// Loss returns micro-batch i's loss, a scalar, from its logits (made
	// in the logits' scope); called on the last stage only.
	Loss func(logits *autograd.Tensor, i int) *autograd.Tensor
	// Scale multiplies every loss before its backward, after the 1/M of
	// the micro-batches' mean (an amp.Scaler's Scale; 0: 1). Step's loss
	// is the unscaled one.
	Scale float64
}

// micro is one micro-batch's state on a stage.
type micro struct {
	s    *autograd.Scope
	in   *autograd.Tensor // stages > 0: the received activation (owned by s)
	x    *autograd.Tensor // stages > 0: the leaf standing for it in the graph
	out  *autograd.Tensor // the stage's output, or the last stage's scaled loss
	grad *autograd.Tensor // stages < P−1: the received gradient of out
	dx   *autograd.Tensor // stages > 0: x's gradient, sent back
	loss float64          // the last stage's unscaled loss
}

// release frees what the micro-batch still holds.
func (m *micro) release() {
	for _, t := range []*autograd.Tensor{m.grad, m.dx} {
		if t != nil {
			t.Release()
		}
	}
	m.grad, m.dx = nil, nil
	if m.s != nil {
		m.s.Release()
		m.s = nil
	}
}

// Step runs one step's M micro-batches through the pipeline, forward and
// backward under the schedule, and returns their mean loss on every
// stage (broadcast from the last). The gradients of Params accumulate
// the micro-batches' contributions in micro-batch order; the last stage
// scales each loss by 1/M before its backward, as train.Stepper with
// Accum M does on one device, so the gradients and the loss equal that
// run's (bit for bit where the kernels are the same: see the package
// documentation). Every rank calls Step with the same batch. On error
// this stage has released the step's activations (its gradients are
// partial: zero them), and the other stages fail too (Run aborts the
// group).
func (p *Pipe) Step(b PipeBatch) (loss float64, err error) {
	switch {
	case p.stage == 0 && b.Tokens == nil:
		return 0, fmt.Errorf("parallel: pipe step: stage 0 needs PipeBatch.Tokens")
	case p.stage == p.stages-1 && b.Loss == nil:
		return 0, fmt.Errorf("parallel: pipe step: the last stage needs PipeBatch.Loss")
	}
	probe := p.dev.Probe()
	defer probe.Stop()
	p.stats = PipeStats{Bubble: Bubble(p.stages, p.cfg.MicroBatches)}
	ms := make([]*micro, p.cfg.MicroBatches)
	for i := range ms {
		ms[i] = &micro{}
	}
	defer func() {
		for _, m := range ms {
			m.release()
		}
		p.stats.Peak = probe.TotalPeak()
		p.stats.PeakActivation = probe.Peak(device.Activation)
	}()
	if err := p.run(schedule(p.cfg.Schedule, p.stage, p.stages, len(ms)), b, ms); err != nil {
		return 0, fmt.Errorf("parallel: pipe stage %d: %w", p.stage, err)
	}
	for _, m := range ms {
		loss += m.loss / float64(len(ms))
	}
	if loss, err = p.shareLoss(loss); err != nil {
		return 0, fmt.Errorf("parallel: pipe stage %d: the loss: %w", p.stage, err)
	}
	return loss, nil
}

// run runs the passes ws, receiving each pass's input before it and
// sending its output after it; a send followed by a receive from the
// same peer is one SendRecv (Megatron's send_forward_recv_backward and
// send_backward_recv_forward), which keeps neighbours that send to each
// other at once from waiting on each other forever.
func (p *Pipe) run(ws []work, b PipeBatch, ms []*micro) error {
	base := p.dev.Stats().ByTag[device.Activation].Current
	inFlight, got := 0, false
	for j, w := range ws {
		if !got {
			if t, from := p.inbox(w, ms); t != nil {
				if err := p.p2p.Recv(t, from); err != nil {
					return err
				}
			}
		}
		got = false
		if err := p.compute(w, b, ms[w.micro]); err != nil {
			return fmt.Errorf("micro-batch %d's %s: %w", w.micro, direction(w), err)
		}
		if !w.backward {
			inFlight++
			p.stats.InFlight = max(p.stats.InFlight, inFlight)
			p.stats.Held = max(p.stats.Held, p.dev.Stats().ByTag[device.Activation].Current-base)
		} else {
			inFlight--
		}
		t, to := p.outbox(w, ms)
		if t == nil {
			continue
		}
		var err error
		if j+1 < len(ws) {
			if next, from := p.inbox(ws[j+1], ms); next != nil && from == to {
				err, got = p.p2p.SendRecv(t, to, next, from), true
			}
		}
		if !got {
			err = p.p2p.Send(t, to)
		}
		if err != nil {
			return err
		}
		if w.backward {
			ms[w.micro].release()
		}
	}
	return nil
}

func direction(w work) string {
	if w.backward {
		return "backward"
	}
	return "forward"
}

// inbox returns the tensor pass w receives into and the rank it comes
// from (nil when w receives nothing), allocating it: a forward's input
// activation in the micro-batch's new scope (stages > 0), a backward's
// output gradient (stages < P−1).
func (p *Pipe) inbox(w work, ms []*micro) (*autograd.Tensor, int) {
	m, shape := ms[w.micro], p.parts.shape(p.cfg.Batch, p.cfg.Seq)
	switch {
	case !w.backward && p.stage > 0:
		if m.in == nil {
			m.s = autograd.NewScope()
			m.in = m.s.Zeros(p.dev, p.dt, shape...)
		}
		return m.in, p.stage - 1
	case w.backward && p.stage < p.stages-1:
		if m.grad == nil {
			m.grad = autograd.New(p.dev, p.dt, device.Workspace, shape...) // an activation gradient (the tag taxonomy: workspace), not a parameter's
		}
		return m.grad, p.stage + 1
	}
	return nil, 0
}

// outbox returns what pass w sends and to which rank (nil: nothing): a
// forward's output to the next stage, a backward's input gradient to the
// previous one.
func (p *Pipe) outbox(w work, ms []*micro) (*autograd.Tensor, int) {
	m := ms[w.micro]
	switch {
	case !w.backward && p.stage < p.stages-1:
		return m.out, p.stage + 1
	case w.backward && p.stage > 0:
		return m.dx, p.stage - 1
	}
	return nil, 0
}

// compute runs pass w of micro-batch m.
func (p *Pipe) compute(w work, b PipeBatch, m *micro) error {
	if w.backward && p.ddp != nil && w.micro < p.cfg.MicroBatches-1 {
		var err error
		p.ddp.NoSync(func() { err = p.backward(m) })
		return err
	}
	if w.backward {
		return p.backward(m)
	}
	if m.s == nil {
		m.s = autograd.NewScope()
	}
	return autograd.Try(func() { p.forward(w.micro, b, m) })
}

// forward runs this stage's part of the model on micro-batch i, under
// the configuration's autocast; the last stage then scales its loss.
func (p *Pipe) forward(i int, b PipeBatch, m *micro) {
	var h *autograd.Tensor
	m.s.Autocast(p.cfg.Autocast, func() { h = p.stageForward(i, b, m) })
	if p.stage < p.stages-1 {
		m.out = h
		return
	}
	m.loss = h.Item()
	if M := p.cfg.MicroBatches; M > 1 {
		h = h.Scale(1 / float64(M))
	}
	if b.Scale != 0 && b.Scale != 1 {
		h = h.Scale(b.Scale)
	}
	m.out = h
}

// stageForward returns this stage's output on micro-batch i: the
// activation sent on, or the last stage's loss.
func (p *Pipe) stageForward(i int, b PipeBatch, m *micro) *autograd.Tensor {
	var h *autograd.Tensor
	if p.stage == 0 {
		idx := b.Tokens(m.s, i)
		if idx == nil || idx.Rank() != 2 || idx.Dim(0) != p.cfg.Batch || idx.Dim(1) != p.cfg.Seq {
			panic(&autograd.Error{Op: "pipe", Msg: fmt.Sprintf("Tokens(%d) returned %v: want (Batch %d, Seq %d) indices", i, shapeOf(idx), p.cfg.Batch, p.cfg.Seq)})
		}
		h = p.parts.embed(idx)
	} else {
		m.x = m.s.LeafOf(m.in)
		h = m.x.View(m.x.Shape()...) // Body releases its input: not the leaf
	}
	h = p.parts.body(h)
	if p.stage < p.stages-1 {
		return h
	}
	l := b.Loss(p.parts.out(h), i)
	if l == nil || l.Len() != 1 {
		panic(&autograd.Error{Op: "pipe", Msg: fmt.Sprintf("Loss(%d) returned %v: want a scalar", i, shapeOf(l))})
	}
	return l
}

func shapeOf(t *autograd.Tensor) any {
	if t == nil {
		return "nil"
	}
	return t.Shape()
}

// backward runs micro-batch m's backward from its output (seeded with
// the received gradient, or the loss) and takes the input's gradient.
func (p *Pipe) backward(m *micro) error {
	var err error
	if p.stage == p.stages-1 {
		err = m.out.Backward()
	} else {
		err = m.out.BackwardWith(m.grad)
		m.grad.Release()
		m.grad = nil
	}
	if err != nil {
		return err
	}
	if p.stage > 0 {
		if m.dx = m.x.TakeGrad(); m.dx == nil {
			return fmt.Errorf("no gradient reached the stage's input")
		}
		return nil
	}
	m.release()
	return nil
}

// shareLoss broadcasts the last stage's loss to every stage.
func (p *Pipe) shareLoss(loss float64) (float64, error) {
	return p.scalar(loss, func(t *autograd.Tensor) error { return p.c.Broadcast(t, p.stages-1) })
}

// scalar runs the collective f on a one-element F64 tensor holding v (8
// bytes, tag communication, freed after) and returns its result.
func (p *Pipe) scalar(v float64, f func(*autograd.Tensor) error) (float64, error) {
	return onScalar(p.dev, v, f)
}

// Optimizer returns o, an optimizer over this stage's Params, as an
// optim.Sharded whose AllSum adds a value over the stages (an F64
// all-reduce, every stage calling it at the same point): then
// optim.ClipGradNormOf clips every stage by the norm of the whole model's
// gradients, and a loss scaler's overflow check agrees on every stage.
func (p *Pipe) Optimizer(o optim.Optimizer) optim.Sharded { return pipeOptimizer{o, p} }

// pipeOptimizer is a stage's optimizer whose sums span the stages.
type pipeOptimizer struct {
	optim.Optimizer
	p *Pipe
}

// AllSum returns the sum of v over the stages.
func (o pipeOptimizer) AllSum(v float64) (float64, error) {
	return o.p.scalar(v, func(t *autograd.Tensor) error { return o.p.c.AllReduce(t, Sum) })
}
