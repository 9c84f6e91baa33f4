package cuda

import (
	"math"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// fill queues the fill kernel of the sources (elementwise.cu) on o.
func fill(k *kern, o device.Operand, v float64) {
	k.launch("fill_"+Suffix(o.DType), Linear(o.Len()), k.Ptr(o), Lay(o), I64(int64(o.Len())), F64(v))
}

// TestDeferred: launches return before the fake driver runs them (it runs
// a stream's work only when something synchronises); Read synchronises and
// sees every queued launch, in order.
func TestDeferred(t *testing.T) {
	d, _ := open(t, device.Options{})
	defer d.Close()
	k := d.Kernels().(*kern)
	o := newOp(t, d, dtype.F32, make([]float64, 3000))
	for i := 1; i <= 20; i++ {
		fill(k, o, float64(i))
	}
	half := o
	half.Shape = []int{1500}
	fill(k, half, -1)
	got := readF64(o, d)
	for i, v := range got {
		want := 20.0
		if i < 1500 {
			want = -1
		}
		if v != want {
			t.Fatalf("element %d = %v after the queued fills, want %v", i, v, want)
		}
	}
}

// TestSecondDevice: two devices on one index have their own memory and
// kernels, and work together.
func TestSecondDevice(t *testing.T) {
	a, _ := open(t, device.Options{})
	defer a.Close()
	b, _ := open(t, device.Options{})
	defer b.Close()
	oa := newOp(t, a, dtype.F64, make([]float64, 10))
	ob := newOp(t, b, dtype.F64, make([]float64, 10))
	fill(a.Kernels().(*kern), oa, math.Pi)
	fill(b.Kernels().(*kern), ob, math.E)
	if va, vb := readF64(oa, a)[9], readF64(ob, b)[9]; va != math.Pi || vb != math.E {
		t.Fatalf("devices read %v and %v, want π and e", va, vb)
	}
}

// BenchmarkLaunch measures the host time of one queued launch (a small
// fill), through the worker; the driver here is whatever libcuda the
// tests load (the emulator, which queues launches and runs them at the
// final Read).
func BenchmarkLaunch(b *testing.B) {
	d, _ := open(b, device.Options{})
	defer d.Close()
	k := d.Kernels().(*kern)
	o := newOp(b, d, dtype.F32, make([]float64, 256))
	b.ReportAllocs()
	for b.Loop() {
		fill(k, o, 1)
	}
	readF64(o, d)
}

// BenchmarkGemm reports GEMM TFLOP/s, F32 and BF16, through headroom's
// path (Kernels.Gemm: checks, the queue to the device's thread, cuBLAS) and
// through cuBLAS called directly (the same call in a loop on the device's
// thread, no queue): 4096³ on a GPU, 32³ on the emulator.
func BenchmarkGemm(b *testing.B) {
	d, be := open(b, device.Options{})
	defer d.Close()
	n := 4096
	if name, _ := be.g.drv.DeviceName(be.g.dev); name == "headroom emulator" {
		n = 32 // the emulator runs GEMMs in double loops: its figure is not a GPU's
	}
	k := d.Kernels().(*kern)
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		mk := func() device.Operand {
			blk, err := d.Alloc(int64(n*n*dt.Size()), device.Label{Tag: device.Activation, Op: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(blk.Release)
			o := device.Operand{Block: blk, DType: dt, Shape: []int{n * n}}
			fill(k, o, 0.5)
			return o
		}
		p := device.Gemm{M: n, N: n, K: n, Alpha: 1, A: mk(), B: mk(), C: mk(), LdA: n, LdB: n, LdC: n, Batch: 1}
		c, _ := k.blasCall(p)
		flops := 2 * float64(n) * float64(n) * float64(n)
		b.Run(dt.String()+"/headroom", func(b *testing.B) {
			k.Gemm(p)
			syncOrFail(b, be.g)
			b.ResetTimer()
			for range b.N {
				k.Gemm(p)
			}
			syncOrFail(b, be.g) // timed: the work is done only when the stream is
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		})
		b.Run(dt.String()+"/cublas", func(b *testing.B) {
			syncOrFail(b, be.g)
			b.ResetTimer()
			err := be.g.do(func() error {
				for range b.N {
					if err := be.g.blas.Gemm(c); err != nil {
						return err
					}
				}
				return be.g.drv.StreamSync(be.g.stream)
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		})
	}
}

// syncOrFail waits for the device's queue and stream.
func syncOrFail(b *testing.B, g *gpu) {
	if err := g.sync(); err != nil {
		b.Fatal(err)
	}
}

// TestStickyLaunchError: a launch the driver refuses (a block of 2048
// threads) is raised by the next call as a KernelError naming the kernel,
// once; the device then works on.
func TestStickyLaunchError(t *testing.T) {
	d, _ := open(t, device.Options{})
	defer d.Close()
	k := d.Kernels().(*kern)
	o := newOp(t, d, dtype.F32, make([]float64, 4))
	bad := Launch{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{2048, 1, 1}}
	k.launch("fill_f32", bad, k.Ptr(o), Lay(o), I64(4), F64(1))
	func() {
		defer func() {
			ke, ok := recover().(*device.KernelError)
			if !ok || ke.Op != "fill_f32" || ke.Device != d.Name() {
				t.Fatalf("recovered %v, want a KernelError for fill_f32 on %s", ke, d.Name())
			}
			t.Log(ke)
		}()
		readF64(o, d)
	}()
	fill(k, o, 2)
	if v := readF64(o, d)[3]; v != 2 {
		t.Fatalf("after the raised error the device computes %v, want 2", v)
	}
}

// BenchmarkLaunchHost measures the calling goroutine's time per queued
// launch alone: bursts of 512 launches (they fit the queue, so the caller
// never waits for the worker), the device synchronised between bursts
// with the timer stopped. This is the host time an op costs its caller.
func BenchmarkLaunchHost(b *testing.B) {
	d, _ := open(b, device.Options{})
	defer d.Close()
	k := d.Kernels().(*kern)
	o := newOp(b, d, dtype.F32, make([]float64, 256))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		fill(k, o, 1)
		if i%512 == 511 {
			b.StopTimer()
			readF64(o, d)
			b.StartTimer()
		}
	}
}
