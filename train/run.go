package train

import (
	"fmt"
	"io"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/nn"
)

// Train runs program p as the flags say — on one device cpu:0, or on
// --ranks data-parallel ranks (see trainRanks) — and returns its report:
// it builds the replica, resumes it from --resume, prints the header,
// trains with the progress display and --mem-alert's monitor (an alert
// stops the run with a resumable snapshot), evaluates, prints the memory
// summary and the result, and writes --report and --save. The device is
// closed at the end.
func Train[R Replica](c *Common, out io.Writer, p *Program[R]) (_ *Report, err error) {
	if c.Parallel() {
		return trainRanks(c, out, p)
	}
	capacity, err := c.Capacity()
	if err != nil {
		return nil, err
	}
	dev, err := OpenDevice(c.Device, device.Options{Capacity: capacity})
	if err != nil {
		return nil, err
	}
	defer Close(dev, &err)
	if err := planBudget(c, out, p, dev); err != nil {
		return nil, err
	}
	r, err := newRun(c, out, p, dev, nil)
	if err != nil {
		return nil, err
	}
	defer r.release()
	if host := openUndoHost(r.Stepper); host != nil {
		defer Close(host, &err)
	}
	r.header(p, dev.String(), fmt.Sprintf("batch %d×%d", c.Batch/c.Accum, c.Accum))
	if err := r.resume(p.Steps); err != nil {
		return nil, err
	}
	mon, closeLog, err := c.Watch()
	if err != nil {
		return nil, err
	}
	defer closeLog()
	view := c.startView(dev, out)
	began := time.Now()
	if err := r.train(p.Name, mon); err != nil {
		return nil, err
	}
	if err := view(); err != nil {
		return nil, err
	}
	seconds := time.Since(began).Seconds()
	ev, err := p.Evaluate(r)
	if err != nil {
		return nil, err
	}
	rep := r.report(p, ev, capacity, seconds)
	fmt.Fprint(out, r.Trained.Summary())
	c.reportActivationHosts(out, rep)
	c.reportBudget(rep)
	reportUndoHost(out, rep, r.Stepper.Host)
	result(out, rep, ev, r.End-r.Start)
	if err := c.writeReport(rep); err != nil {
		return nil, err
	}
	if c.Save != "" {
		if err := r.save(c.Save, r.End); err != nil {
			return nil, err
		}
		fmt.Fprintln(out, "saved", c.Save)
	}
	return rep, nil
}

// train runs the steps from Start to End, watched by mon (nil: none); a
// memory alert stops the run with a resumable snapshot (StopOnAlert). It
// records the trained device's statistics in Trained.
func (r *Run[R]) train(name string, mon *Monitor) error {
	var prog *Progress
	if r.End > r.Start {
		prog = NewProgress(r.Out, r.Start, r.End, name)
	}
	loss, i, err := steps(r.Stepper, r.Start, r.End, r.C.Batch, r.Dev, r.R.Forward, prog, mon)
	if Alerted(err) {
		r.Loss = loss // the step trained; the alert came after it
		return r.C.StopOnAlert(err, name, func(path string) error { return r.save(path, i+1) })
	}
	if err != nil {
		return err // the Stepper's error names the step
	}
	if r.End > r.Start {
		r.Loss = loss
	}
	r.Trained, r.skipped = r.Dev.Stats(), r.Stepper.Scaler.Skipped()
	return nil
}

// steps runs steps from to to−1 (0-based) through st, each watched by mon
// (nil: none) and shown on prog (nil: none) with the throughput of batch
// samples a step. It returns the last step's loss and, on an error, the
// step that failed (its loss too when the error is mon's).
func steps(st *Stepper, from, to, batch int, dev *device.Device, forward func(*autograd.Scope, int) *autograd.Tensor,
	prog *Progress, mon *Monitor) (loss float64, failed int, err error) {
	began := time.Now()
	for i := from; i < to; i++ {
		mon.Begin(dev)
		l, _, err := st.Step(forward)
		if err == nil {
			err = mon.End(i)
		}
		if err != nil {
			prog.Done()
			return l, i, err
		}
		loss = l
		prog.Step(i, loss, float64((i+1-from)*batch)/time.Since(began).Seconds(), dev)
	}
	prog.Done()
	return loss, to, nil
}

// RunSteps runs n optimizer steps of batch samples through st — a
// fine-tuning after the run, say — with a progress display named desc on
// out, and returns the last step's loss.
func RunSteps(out io.Writer, desc string, st *Stepper, n, batch int, dev *device.Device, forward func(*autograd.Scope, int) *autograd.Tensor) (float64, error) {
	loss, _, err := steps(st, 0, n, batch, dev, forward, NewProgress(out, 0, n, desc), nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", desc, err) // the Stepper's error names the step
	}
	return loss, nil
}

// report assembles the run's report after the evaluation ev.
func (r *Run[R]) report(p *Program[R], ev Eval, capacity int64, seconds float64) *Report {
	rep := &Report{
		Example: p.Name, Model: p.Model, Params: nn.Count(r.R.Module()), Steps: r.End, FinalLoss: r.Loss,
		Eval: ev.Value, EvalMetric: p.Metric, Seconds: seconds, PeakBytes: Peaks(r.Trained), CapacityBytes: capacity,
		Flags: r.C.Values(), Stats: r.Trained, Extra: ev.Extra, Kernels: kernelPath(r.Dev),
	}
	if n := r.End - r.Start; n > 0 {
		rep.SamplesPerSec = float64(n*r.C.Batch) / seconds
	}
	if rep.Extra == nil {
		rep.Extra = map[string]any{}
	}
	rep.Extra["skipped_steps"] = r.skipped
	return rep
}

// result prints the result line: the evaluation, the final loss and the
// speed of the steps trained, then ev.After.
func result(out io.Writer, rep *Report, ev Eval, steps int) {
	speed := "no step trained"
	if steps > 0 {
		speed = fmt.Sprintf("%.1f samples/s", rep.SamplesPerSec)
	}
	fmt.Fprintf(out, "%s; final training loss %.4f; %s; %.0f s\n", ev.Line, rep.FinalLoss, speed, rep.Seconds)
	fmt.Fprint(out, ev.After)
}

// writeReport writes --report (if given).
func (c *Common) writeReport(rep *Report) error {
	if c.Report == "" {
		return nil
	}
	rep.MemView = c.viewFromReport()
	return rep.Write(c.Report)
}
