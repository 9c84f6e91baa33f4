package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestDropout: the cuda and cpu outputs are identical bit for bit (the same
// Philox4x32-10 words and keep rule, the same scaling and rounding) for
// every float dtype, offsets not a multiple of 4, strided views and
// several probabilities; and the mask is a real one (some kept, some
// dropped).
func TestDropout(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(41, 42))
	for _, dt := range floatDTypes() {
		for _, lc := range layoutCases {
			for _, c := range []struct {
				p            float64
				seed, offset uint64
			}{{0.1, 1, 0}, {0.5, 0xdeadbeefcafe, 3}, {0.9, 42, 1<<33 + 6}, {0, 7, 5}, {1, 3, 0}} {
				name := fmt.Sprintf("%s/%s/p %g/offset %d", dt, lc.name, c.p, c.offset)
				src := p.put(t, lc.src(dt), positive(r, dt, lc.srcN))
				dst := p.put(t, lc.dst(dt), nil)
				p.cpu.Kernels().Dropout(dst.cpu, src.cpu, c.p, c.seed, c.offset)
				p.gpu.Kernels().Dropout(dst.gpu, src.gpu, c.p, c.seed, c.offset)
				cb, gb := p.read(dst)
				exact(t, name, dt, cb, gb)
			}
		}
	}
	// A mask of 4000 elements at p = 0.5 keeps about half: the comparison
	// above is not between two all-zero (or all-kept) outputs.
	src := p.put(t, dense(dtype.F32, 4000), positive(r, dtype.F32, 4000))
	dst := p.put(t, dense(dtype.F32, 4000), nil)
	p.gpu.Kernels().Dropout(dst.gpu, src.gpu, 0.5, 9, 2)
	_, g := p.read(dst)
	kept := 0
	for _, v := range dtype.AsF32(g) {
		if v != 0 {
			kept++
		}
	}
	if kept < 1800 || kept > 2200 {
		t.Errorf("dropout p=0.5 kept %d of 4000 elements, want about 2000", kept)
	}
}
