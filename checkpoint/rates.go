package checkpoint

import (
	"sync"
	"time"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Rate probe sizes: a 512³ F32 matrix product (2.7·10⁸ FLOP), a tanh
// GELU of a 1 Mi-element F32 vector and an add of two (20 MiB moved in
// all) and a 4 MiB copy to the host and back; each is repeated until rateProbeTime has passed (at
// least twice, at most rateProbeReps times).
const (
	rateGEMM      = 512
	rateElems     = 1 << 20
	rateProbeTime = 20 * time.Millisecond
	rateProbeReps = 64
)

var (
	ratesMu    sync.Mutex
	ratesCache = map[string]Rates{}
)

// MeasureRates times, on dev, a short matrix product, a GELU and an add,
// and a copy to host and back (the probes above: about 0.1 s in all, at
// most 28 MiB on dev and 4 MiB on host, freed before it returns) and
// returns the rates they ran at. It is cached per device kind and host
// kind: a process measures once. A device without kernels (meta) returns
// DefaultRates.
func MeasureRates(dev, host *device.Device) Rates {
	if dev.Kernels() == nil || host.Kernels() == nil {
		return DefaultRates
	}
	key := dev.Kind() + "→" + host.Kind()
	ratesMu.Lock()
	defer ratesMu.Unlock()
	if r, ok := ratesCache[key]; ok {
		return r
	}
	s := autograd.NewScope()
	defer s.Release()
	var r Rates
	s.NoGrad(func() {
		a := s.Full(dev, dtype.F32, 1, rateGEMM, rateGEMM)
		b := s.Full(dev, dtype.F32, 1, rateGEMM, rateGEMM)
		r.FLOPS = 2 * rateGEMM * rateGEMM * rateGEMM / probe(func() { autograd.Linear(a, b, nil).Release() })
		x := s.Full(dev, dtype.F32, 1, rateElems)
		y := s.Full(dev, dtype.F32, 1, rateElems)
		// A tanh GELU (2 vectors moved) and an add (3): the recomputed
		// pointwise work of a GPT block is mostly those.
		r.Memory = 5 * 4 * rateElems / probe(func() {
			x.GELUTanh().Release()
			x.Add(y).Release()
		})
		r.Copy = 2 * 4 * rateElems / probe(func() {
			h := x.To(host)
			h.To(dev).Release()
			h.Release()
		})
	})
	ratesCache[key] = r
	return r
}

// probe returns the seconds one call of f takes: the least of repeated
// timed calls, after one untimed warm-up call.
func probe(f func()) float64 {
	f()
	best := time.Duration(1 << 62)
	var spent time.Duration
	for i := 0; i < rateProbeReps && (i < 2 || spent < rateProbeTime); i++ {
		t := time.Now()
		f()
		d := time.Since(t)
		spent += d
		best = min(best, d)
	}
	return max(best.Seconds(), 1e-9)
}
