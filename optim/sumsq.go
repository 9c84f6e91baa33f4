package optim

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// SumSquares returns Σ t² of each tensor, accumulated in float64 on the
// tensor's device, with one host read per device whatever the number of
// tensors: the sums go into one F64 workspace tensor per device (one
// element per tensor, tagged device.Workspace and labelled op, freed before
// it returns), and each is read once. Gradient clipping takes the global
// norm from it and the loss scaler its inf/NaN check (a non-finite sum
// means the tensor holds an infinity or a NaN).
//
// When scale is not 1 every tensor is first multiplied by scale in place
// (the loss scaler's unscale), after the workspace is allocated, so that
// when it fails no tensor has changed. The tensors must be contiguous
// float tensors, none listed twice; on meta the sums are 0.
func SumSquares(op string, ts []*autograd.Tensor, scale float64) ([]float64, error) {
	for i, t := range ts {
		if t == nil || !t.DType().IsFloat() || !dense(t) {
			return nil, fmt.Errorf("%s: sum of squares: tensor %d is not a live contiguous float tensor", op, i)
		}
	}
	var devs []*device.Device
	slot := make([]int, len(ts))
	count := map[*device.Device]int{}
	for i, t := range ts {
		d := t.Device()
		if count[d] == 0 {
			devs = append(devs, d)
		}
		slot[i] = count[d]
		count[d]++
	}
	ws := map[*device.Device]*autograd.Tensor{}
	defer func() {
		for _, w := range ws {
			w.Release()
		}
	}()
	err := autograd.Try(func() {
		for _, d := range devs {
			w := autograd.New(d, dtype.F64, device.Workspace, count[d])
			ws[d] = w
			w.Block().Relabel(op, "")
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	err = autograd.Try(func() {
		for i, t := range ts {
			if scale != 1 {
				t.ScaleInPlace(scale)
			}
			if k := t.Device().Kernels(); k != nil {
				dst := device.Operand{Block: ws[t.Device()].Block(), Off: slot[i], DType: dtype.F64, Shape: []int{1}}
				k.SumSquares(dst, operand(t))
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	host := map[*device.Device][]float64{}
	for _, d := range devs {
		host[d] = ws[d].Float64s()
	}
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = host[t.Device()][slot[i]]
	}
	return out, nil
}
