package parallel_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

const benchBytes = 64 << 20

// BenchmarkAllReduce measures the in-process all-reduce (Avg) of 64 MiB of
// F32 and BF16 on 2 and 4 ranks; MB/s is the tensor's bytes per all-reduce
// (NCCL's "algorithm bandwidth"), bus-MB/s that times 2(N−1)/N (NCCL's
// "bus bandwidth": the bytes each rank must receive). Compare with
// BenchmarkCopy, a plain copy of the same bytes on one core.
func BenchmarkAllReduce(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			b.Run(fmt.Sprintf("ranks=%d/%s", n, dt), func(b *testing.B) {
				comms := parallel.NewGroup(n)
				ts := make([]*autograd.Tensor, n)
				for r := range n {
					ts[r] = autograd.New(cpu.New(r, device.Options{}), dt, device.Communication, benchBytes/dt.Size())
					ts[r].Fill(float64(r))
				}
				b.SetBytes(benchBytes)
				b.ResetTimer()
				err := parallel.Run(comms, func(c parallel.Communicator) error {
					for range b.N {
						if err := c.AllReduce(ts[c.Rank()], parallel.Avg); err != nil {
							return err
						}
					}
					return nil
				})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(benchBytes/sec/1e6*2*float64(n-1)/float64(n), "bus-MB/s")
				for _, t := range ts {
					t.Release()
				}
			})
		}
	}
}

// BenchmarkCopy is the reference: copy of 64 MiB between two host buffers.
func BenchmarkCopy(b *testing.B) {
	dst, src := make([]byte, benchBytes), make([]byte, benchBytes)
	for i := range src {
		src[i] = byte(i)
	}
	b.SetBytes(benchBytes)
	for b.Loop() {
		copy(dst, src)
	}
}
