package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// StageBytes bounds the host scratch of one rank of the in-process group
// whose tensors live on a device without host memory (cuda): a collective
// moves such a tensor through the host in rounds, each rank reading its
// part of the round into a Go slice of at most StageBytes with the
// device's Kernels.Read, the ranks reducing or copying from each other's
// slices, and each writing its result back with Kernels.Write. The slice
// is made at the rank's first such collective and kept by its
// communicator (StageBytes per cuda rank, outside every allocator). Host
// tensors (cpu) are read and written in place, with no staging.
const StageBytes = 4 << 20

// stageBytes is StageBytes; tests lower it to make rounds small.
var stageBytes = StageBytes

// buf is one rank's tensor in a collective, as the group reaches it:
// host bytes, or a contiguous operand of a device without host memory
// (staged), or neither (meta: nothing moves).
type buf struct {
	host []byte         // the tensor's elements, when host-addressable
	k    device.Kernels // otherwise the device's kernels, and
	op   device.Operand // the tensor's elements on it
	es   int            // element size
}

// data reports whether the tensor holds values (not meta).
func (b buf) data() bool { return b.host != nil || b.k != nil }

// staged reports whether the tensor's values go through host scratch.
func (b buf) staged() bool { return b.host == nil && b.k != nil }

// part returns elements [lo, hi) of the operand.
func (b buf) part(lo, hi int) device.Operand {
	return device.Operand{Block: b.op.Block, Off: b.op.Off + lo, DType: b.op.DType, Shape: []int{hi - lo}}
}

// bufOf checks t for a collective and returns how to reach its elements.
func bufOf(kind, what string, t *autograd.Tensor) (buf, error) {
	switch {
	case t == nil || t.Released():
		return buf{}, fmt.Errorf("parallel: %s: %s is nil or released", kind, what)
	case !t.IsContiguous():
		return buf{}, fmt.Errorf("parallel: %s: %s %v with strides %v is not contiguous", kind, what, t.Shape(), t.Strides())
	}
	switch t.DType() {
	case dtype.F64, dtype.F32, dtype.BF16, dtype.F16:
	default:
		return buf{}, fmt.Errorf("parallel: %s: %s has dtype %s, want f64, f32, bf16 or f16", kind, what, t.DType())
	}
	es := t.DType().Size()
	b := buf{es: es, op: device.Operand{Block: t.Block(), Off: t.Offset(), DType: t.DType(), Shape: []int{t.Len()}}}
	if h := t.Block().Bytes(); h != nil {
		b.host = h[t.Offset()*es : (t.Offset()+t.Len())*es]
	} else {
		b.k = t.Device().Kernels()
	}
	return b, nil
}

// anyStaged reports whether some rank's tensors go through host scratch:
// then every rank works in the same rounds.
func anyStaged(ps []post) bool {
	for _, p := range ps {
		if p.a.staged() || p.b.staged() {
			return true
		}
	}
	return false
}

// round returns the elements of one round for a collective whose ranks
// each stage parts pieces of a round: all n at once when no rank stages,
// else as many as parts pieces fit in stageBytes (at least 1).
func round(ps []post, n, es, parts int) int {
	if !anyStaged(ps) {
		return max(n, 1)
	}
	return max(stageBytes/(parts*es), 1)
}

// slot returns bytes [off, off+n) of this rank's staging slice, made
// (stageBytes, or more for a round of one element per part when parts
// element sizes exceed it) at the first use.
func (c *local) slot(off, n int) []byte {
	if len(c.host) < off+n {
		c.host = make([]byte, max(off+n, stageBytes))
	}
	return c.host[off : off+n]
}

// load returns elements [lo, hi) of b as host bytes: b's own memory, or
// a copy read into bytes [off, …) of the staging slice.
func (c *local) load(b buf, lo, hi, off int) []byte {
	if b.host != nil {
		return b.host[lo*b.es : hi*b.es]
	}
	s := c.slot(off, (hi-lo)*b.es)
	c.guard(func() { b.k.Read(s, b.part(lo, hi)) })
	return s
}

// store writes p into elements [lo, hi) of b, unless p is b's own memory.
func (c *local) store(b buf, lo, hi int, p []byte) {
	if b.host != nil {
		dst := b.host[lo*b.es : hi*b.es]
		if len(p) > 0 && &dst[0] != &p[0] {
			copy(dst, p)
		}
		return
	}
	c.guard(func() { b.k.Write(b.part(lo, hi), p) })
}

// guard runs a device copy of this rank, turning its failure into the
// rank's error for the collective (the first one is kept, and later
// copies are skipped): a rank must never leave a collective's phases
// early, or the others would wait for it forever.
func (c *local) guard(f func()) {
	if c.failed != nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				c.failed = e
				return
			}
			c.failed = fmt.Errorf("%v", r)
		}
	}()
	f()
}
