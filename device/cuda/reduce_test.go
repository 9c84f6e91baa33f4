package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// reduceCase is a source view and the destination shape that reduces it.
type reduceCase struct {
	name   string
	src    opnd
	dshape []int
}

// reduceCases cover one inner axis, an outer axis (the bias gradient), two
// non-adjacent axes of a transposed view, everything, a broadcast source,
// long reductions (block launches) and many short ones (thread launches).
var reduceCases = []reduceCase{
	{"inner", opnd{n: 24, shape: []int{4, 6}}, []int{4, 1}},
	{"outer", opnd{n: 60, shape: []int{3, 20}}, []int{1, 20}},
	{"columns", opnd{n: 40 * 300, shape: []int{40, 300}}, []int{1, 300}},
	{"transposed-02", opnd{n: 60, shape: []int{3, 4, 5}, strides: []int{1, 15, 3}}, []int{1, 4, 1}},
	{"all", opnd{n: 32, off: 2, shape: []int{2, 14}, strides: []int{15, 1}}, []int{1, 1}},
	{"broadcast", opnd{n: 5, shape: []int{3, 5}, strides: []int{0, 1}}, []int{3, 1}},
	{"long", opnd{n: 3 * 1000, shape: []int{3, 1000}}, []int{3, 1}},
	{"long-strided", opnd{n: 2 * 700 * 2, shape: []int{700, 2}, strides: []int{4, 1}}, []int{1, 2}},
	{"many-short", opnd{n: 9000 * 3, shape: []int{9000, 3}}, []int{9000, 1}},
	{"many-rows", opnd{n: 600 * 40, shape: []int{600, 40}}, []int{600, 1}},
	{"keep-all", opnd{n: 6, shape: []int{2, 3}}, []int{2, 3}},
}

// TestReduce: every reduction of every dtype over every case against the
// cpu device: Sum and Mean (double accumulation in another order) and Var
// within the F64 tolerance of the rounded result, Max, Min and ArgMax
// exactly, with NaNs and ties in the data (first NaN wins, first maximum).
func TestReduce(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(21, 22))
	for op := device.ReduceOp(0); op < device.NumReduceOps; op++ {
		for _, dt := range allDTypes() {
			for _, rc := range reduceCases {
				if op == device.ArgMax && countAxes(rc) != 1 {
					continue
				}
				name := fmt.Sprintf("%s/%s/%s", op, dt, rc.name)
				so := rc.src
				so.dt = dt
				raw := values(r, dt, so.n, false)
				if op == device.Max || op == device.Min || op == device.ArgMax {
					raw = tiesAndNaNs(r, dt, so.n)
				}
				src := p.put(t, so, raw)
				ddt := dt
				if op == device.ArgMax {
					ddt = dtype.I64
				}
				dst := p.put(t, dense(ddt, rc.dshape...), nil)
				corr := float64(len(name) % 2) // Var: population (0) and sample (1) variance
				p.cpu.Kernels().Reduce(op, dst.cpu, src.cpu, corr)
				p.gpu.Kernels().Reduce(op, dst.gpu, src.gpu, corr)
				c, g := p.read(dst)
				switch op {
				case device.Max, device.Min, device.ArgMax:
					exact(t, name, ddt, c, g)
				default:
					near(t, name, ddt, c, g, math.Max(tolerance(ddt), 1e-12))
				}
			}
		}
	}
}

func countAxes(rc reduceCase) int {
	n := 0
	for i, s := range rc.src.shape {
		if rc.dshape[i] == 1 && s != 1 {
			n++
		}
	}
	return n
}

// tiesAndNaNs returns small integers (many ties) with an occasional NaN.
func tiesAndNaNs(r *rand.Rand, dt dtype.DType, n int) []byte {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(r.IntN(7) - 3)
		if dt.IsFloat() && r.IntN(40) == 0 {
			v[i] = math.NaN()
		}
	}
	b := make([]byte, n*dt.Size())
	dtype.FromF64(dt, b, v)
	return b
}

// TestSumSquares: Σx² into one F64, for sizes around the 4096-element
// chunk, bit for bit the cpu device's (the same chunks, lanes and order),
// in one round and in rounds of two chunks (a source of more than 2^28
// elements takes several).
func TestSumSquares(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(23, 24))
	defer func(n int) { sumSquaresRound = n }(sumSquaresRound)
	for _, round := range []int{sumSquaresMaxChunks, 2} {
		sumSquaresRound = round
		sumSquaresSizes(t, p, r)
	}
}

// TestReduceDTypes: a 16-bit or integer source reduced into a wider
// destination (the sum is stored from double, as the cpu stores it).
func TestReduceDTypes(t *testing.T) {
	p := devices(t)
	r := rand.New(rand.NewPCG(25, 26))
	for _, sd := range allDTypes() {
		for _, dd := range []dtype.DType{dtype.F64, dtype.F32, dtype.I64} {
			src := p.put(t, dense(sd, 5, 40), values(r, sd, 200, false))
			dst := p.put(t, dense(dd, 5, 1), nil)
			p.cpu.Kernels().Reduce(device.Sum, dst.cpu, src.cpu, 0)
			p.gpu.Kernels().Reduce(device.Sum, dst.gpu, src.gpu, 0)
			c, g := p.read(dst)
			near(t, fmt.Sprintf("sum %s into %s", sd, dd), dd, c, g, math.Max(tolerance(dd), 1e-12))
		}
	}
}

func sumSquaresSizes(t *testing.T, p pair, r *rand.Rand) {
	for _, dt := range floatDTypes() {
		for _, n := range []int{0, 1, 7, 4096, 4099, 3*4096 + 5, 20000} {
			src := p.put(t, opnd{dt: dt, n: n + 3, off: 3, shape: []int{n}}, values(r, dt, n+3, false))
			dst := p.put(t, dense(dtype.F64, 1), values(r, dtype.F64, 1, false))
			p.cpu.Kernels().SumSquares(dst.cpu, src.cpu)
			p.gpu.Kernels().SumSquares(dst.gpu, src.gpu)
			c, g := p.read(dst)
			exact(t, fmt.Sprintf("%s/%d/round %d", dt, n, sumSquaresRound), dtype.F64, c, g)
		}
	}
}
