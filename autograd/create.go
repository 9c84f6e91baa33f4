package autograd

import (
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// New returns a zero-filled free-standing tensor labelled with tag. The
// caller owns it and releases it.
func New(dev *device.Device, dt dtype.DType, tag device.Tag, shape ...int) *Tensor {
	t := alloc(nil, dev, dt, shape, device.Label{Tag: tag, Op: "new"})
	fill(t, 0)
	return t
}

// Zeros returns a zero-filled free-standing tensor tagged Other.
func Zeros(dev *device.Device, dt dtype.DType, shape ...int) *Tensor {
	return New(dev, dt, device.Other, shape...)
}

// Full returns a free-standing tensor tagged Other with every element v.
func Full(dev *device.Device, dt dtype.DType, v float64, shape ...int) *Tensor {
	t := alloc(nil, dev, dt, shape, device.Label{Tag: device.Other, Op: "full"})
	fill(t, v)
	return t
}

// Param returns a zero-filled leaf parameter that requires grad, tagged
// Parameter and named name (its allocations are charged to that name).
func Param(dev *device.Device, dt dtype.DType, name string, shape ...int) *Tensor {
	t := alloc(nil, dev, dt, shape, device.Label{Tag: device.Parameter, Op: "param", Scope: name})
	fill(t, 0)
	t.name, t.requiresGrad = name, true
	return t
}

// FromFloat32s copies data into a new free-standing F32 tensor tagged Other.
func FromFloat32s(dev *device.Device, shape []int, data []float32) *Tensor {
	return fromHost(nil, dev, dtype.F32, shape, dtype.Bytes(data), len(data), "from_float32s")
}

// FromFloat64s copies data into a new free-standing F64 tensor tagged Other.
func FromFloat64s(dev *device.Device, shape []int, data []float64) *Tensor {
	return fromHost(nil, dev, dtype.F64, shape, dtype.Bytes(data), len(data), "from_float64s")
}

// FromInt64s copies data into a new free-standing I64 tensor tagged Other.
func FromInt64s(dev *device.Device, shape []int, data []int64) *Tensor {
	return fromHost(nil, dev, dtype.I64, shape, dtype.Bytes(data), len(data), "from_int64s")
}

// Zeros returns a zero-filled tensor owned by the scope (tagged Activation
// in forward).
func (s *Scope) Zeros(dev *device.Device, dt dtype.DType, shape ...int) *Tensor {
	t := alloc(s, dev, dt, shape, s.label("zeros"))
	fill(t, 0)
	return t
}

// Full returns a tensor owned by the scope with every element v.
func (s *Scope) Full(dev *device.Device, dt dtype.DType, v float64, shape ...int) *Tensor {
	t := alloc(s, dev, dt, shape, s.label("full"))
	fill(t, v)
	return t
}

// FromFloat32s copies data into a new F32 tensor owned by the scope (an
// input of the step: tagged Activation).
func (s *Scope) FromFloat32s(dev *device.Device, shape []int, data []float32) *Tensor {
	return fromHost(s, dev, dtype.F32, shape, dtype.Bytes(data), len(data), "input")
}

// FromFloat64s copies data into a new F64 tensor owned by the scope.
func (s *Scope) FromFloat64s(dev *device.Device, shape []int, data []float64) *Tensor {
	return fromHost(s, dev, dtype.F64, shape, dtype.Bytes(data), len(data), "input")
}

// FromInt64s copies data into a new I64 tensor owned by the scope.
func (s *Scope) FromInt64s(dev *device.Device, shape []int, data []int64) *Tensor {
	return fromHost(s, dev, dtype.I64, shape, dtype.Bytes(data), len(data), "input")
}

func fromHost(s *Scope, dev *device.Device, dt dtype.DType, shape []int, b []byte, n int, op string) *Tensor {
	if numel(shape) != n {
		fail(op, "%d values for shape %v (%d elements)", n, shape, numel(shape))
	}
	t := alloc(s, dev, dt, shape, s.label(op))
	if k := dev.Kernels(); k != nil {
		k.Write(t.operand(), b)
	}
	return t
}

func fill(t *Tensor, v float64) {
	if k := t.dev.Kernels(); k != nil {
		k.Fill(t.operand(), v)
	}
}

// Fill sets every element of t to v in place. It is not recorded in the
// graph; a tensor saved for backward that is filled afterwards makes that
// backward fail.
func (t *Tensor) Fill(v float64) {
	t.live("fill")
	fill(t, v)
	t.blk.Bump()
}

// SetFloat32s overwrites t (any float dtype, contiguous) with data.
func (t *Tensor) SetFloat32s(data []float32) {
	t.setHost("set_float32s", dtype.F32, dtype.Bytes(data), len(data))
}

// SetFloat64s overwrites t (any float dtype, contiguous) with data.
func (t *Tensor) SetFloat64s(data []float64) {
	t.setHost("set_float64s", dtype.F64, dtype.Bytes(data), len(data))
}

// SetInt64s overwrites t with data.
func (t *Tensor) SetInt64s(data []int64) {
	t.setHost("set_int64s", dtype.I64, dtype.Bytes(data), len(data))
}

func (t *Tensor) setHost(op string, dt dtype.DType, b []byte, n int) {
	t.live(op)
	if n != t.Len() {
		fail(op, "%d values for tensor of shape %v", n, t.shape)
	}
	k := t.dev.Kernels()
	if t.IsContiguous() {
		if k != nil {
			k.Write(t.operand(), convertHost(t.dt, dt, b, n))
		}
	} else {
		// A strided destination is written through a device temporary, on
		// every device kind alike so that meta accounts what cpu does.
		tmp := alloc(nil, t.dev, t.dt, t.shape, device.Label{Tag: device.Workspace, Op: op})
		if k != nil {
			k.Write(tmp.operand(), convertHost(t.dt, dt, b, n))
			k.Copy(t.operand(), tmp.operand())
		}
		tmp.Release()
	}
	t.blk.Bump()
}

// convertHost converts n host elements from one dtype's bytes to another's.
func convertHost(to, from dtype.DType, b []byte, n int) []byte {
	if to == from {
		return b
	}
	f := make([]float64, n)
	dtype.ToF64(f, from, b)
	out := make([]byte, n*to.Size())
	dtype.FromF64(to, out, f)
	return out
}

// hostBytes copies t's elements, converted to dt, into host memory. On a
// device that holds no data (meta) the result is zeros.
func (t *Tensor) hostBytes(op string, dt dtype.DType) []byte {
	t.live(op)
	n := t.Len()
	k := t.dev.Kernels()
	raw := make([]byte, n*t.dt.Size())
	if t.IsContiguous() {
		if k != nil {
			k.Read(raw, t.operand())
		}
	} else {
		// A strided source is gathered through a device temporary, on
		// every device kind alike.
		tmp := alloc(nil, t.dev, t.dt, t.shape, device.Label{Tag: device.Workspace, Op: op})
		if k != nil {
			k.Copy(tmp.operand(), t.operand())
			k.Read(raw, tmp.operand())
		}
		tmp.Release()
	}
	return convertHost(dt, t.dt, raw, n)
}

// Float32s copies the elements out as float32 (row-major). This is an
// explicit copy to the host; on meta it returns zeros.
func (t *Tensor) Float32s() []float32 {
	return append([]float32(nil), dtype.AsF32(t.hostBytes("float32s", dtype.F32))...)
}

// Float64s copies the elements out as float64.
func (t *Tensor) Float64s() []float64 {
	return append([]float64(nil), dtype.AsF64(t.hostBytes("float64s", dtype.F64))...)
}

// Int64s copies the elements out as int64 (floats truncate toward zero).
func (t *Tensor) Int64s() []int64 {
	return append([]int64(nil), dtype.AsI64(t.hostBytes("int64s", dtype.I64))...)
}

// Item returns the single element of a one-element tensor as float64.
func (t *Tensor) Item() float64 {
	if t.Len() != 1 {
		fail("item", "tensor of shape %v has %d elements, want 1", t.shape, t.Len())
	}
	return t.Float64s()[0]
}
