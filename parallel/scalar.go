package parallel

import (
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// AllSumFloat64 returns the sum of every rank's v over c: an all-reduce of
// one F64 element, 8 bytes on dev (tag communication), freed before it
// returns. Every rank of c must call it at the same point, as any
// collective.
func AllSumFloat64(c Communicator, dev *device.Device, v float64) (float64, error) {
	return onScalar(dev, v, func(t *autograd.Tensor) error { return c.AllReduce(t, Sum) })
}

// onScalar runs the collective f on a one-element F64 tensor on dev
// holding v (8 bytes, tag communication, freed after) and returns its
// result.
func onScalar(dev *device.Device, v float64, f func(*autograd.Tensor) error) (float64, error) {
	var t *autograd.Tensor
	if err := autograd.Try(func() { t = autograd.New(dev, dtype.F64, device.Communication, 1) }); err != nil {
		return 0, err
	}
	defer t.Release()
	t.SetFloat64s([]float64{v})
	if err := f(t); err != nil {
		return 0, err
	}
	return t.Float64s()[0], nil
}
