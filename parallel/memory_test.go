package parallel_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// bytesBy are the per-rank peak bytes of the model-state tags.
type bytesBy struct{ param, grad, opt, comm int64 }

func peaks(st device.Stats) bytesBy {
	p := func(t device.Tag) int64 { return st.ByTag[t].Peak }
	return bytesBy{p(device.Parameter), p(device.Gradient), p(device.Optimizer), p(device.Communication)}
}

// TestBytesPerRankMatchTheFormulas trains an MLP of Ψ = 66 parameters (not
// a multiple of 4: the shards are padded) with AdamW on 1, 2 and 4 ranks,
// F32 and BF16 with F32 master weights, ZeRO stages 0–3 with and without
// offload, and checks each rank's peak bytes of parameters, gradients,
// optimizer state and communication buffers — and the host's — against
// the package's formulas, exactly. With one bucket, c = ⌈Ψ/N⌉ and
// Ψ′ = N·c under stages 1–3 (Ψ under stage 0); g is the parameter
// size (4 or 2) and m the optimizer's bytes per element (8 for F32 Adam,
// 12 with masters):
//
//	stage 0: g·Ψ + g·Ψ + m·Ψ,       communication 0
//	stage 1: g·Ψ′ + g·Ψ′ + m·c,     communication 8·N (AllSum's F64 per rank)
//	stage 2: g·Ψ′ + g·c + m·c,      communication 8·N + g·(N+1)·c (the bucket in flight)
//	stage 3: g·c + g·c + m·c,       communication 8·N + g·(N+1)·c: the gathered
//	         parameters (g·Ψ′) are freed before the gradient bucket is made
//	offload: optimizer 0 on the device; on the host 12·c optimizer
//	         (F32 master, m, v) and 4·c gradient.
//
// With mixed precision (g = 2, m = 12) stage 3 is 16·c bytes of model
// states per rank: Rajbhandari et al.'s 16Ψ/N.
func TestBytesPerRankMatchTheFormulas(t *testing.T) {
	const psi = 5*7 + 7 + 7*3 + 3
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, n := range []int{1, 2, 4} {
			for zero := range 4 {
				for _, off := range []bool{false, true} {
					if off && zero == 0 {
						continue
					}
					s := setup{ranks: n, zero: zero, offload: off, dt: dt, widths: []int{5, 7, 3}, batch: 8, steps: 2}
					res := run(t, s)
					g, m := int64(dt.Size()), int64(8)
					if dt != dtype.F32 {
						m = 12
					}
					c := int64((psi + n - 1) / n)
					var want, host bytesBy
					switch zero {
					case 0:
						want = bytesBy{g * psi, g * psi, m * psi, 0}
					case 1:
						want = bytesBy{g * int64(n) * c, g * int64(n) * c, m * c, 8 * int64(n)}
					case 2:
						want = bytesBy{g * int64(n) * c, g * c, m * c, 8*int64(n) + g*int64(n+1)*c}
					case 3:
						want = bytesBy{g * c, g * c, m * c, 8*int64(n) + g*int64(n+1)*c}
					}
					if off {
						want.opt, host = 0, bytesBy{0, 4 * c, 12 * c, 0}
					}
					name := fmt.Sprintf("%s, %d ranks, zero %d, offload %v", dt, n, zero, off)
					for r, x := range res {
						if got := peaks(x.dev); got != want {
							t.Errorf("%s: rank %d peak bytes {param grad opt comm} = %v, want %v", name, r, got, want)
						}
						if got := peaks(x.host); off && got != host {
							t.Errorf("%s: rank %d host peak bytes = %v, want %v", name, r, got, host)
						}
					}
					if n == 4 && off {
						t.Logf("%s: rank 0 device %+v host %+v", name, peaks(res[0].dev), peaks(res[0].host))
					}
				}
			}
		}
	}
}

// TestStage2HoldsTwoBucketsInFlight trains three equal layers, one bucket
// each, under stage 2: while backward fills a bucket, the one handed over
// before it may still be in flight, and no other. The communication peak
// is then 8·N + 2·g·(N+1)·⌈u/N⌉ for buckets of u = 42 elements, and the
// gradient tag holds only the shard.
func TestStage2HoldsTwoBucketsInFlight(t *testing.T) {
	const u = 6*6 + 6
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, n := range []int{1, 2, 4} {
			g := int64(dt.Size())
			s := setup{ranks: n, zero: 2, dt: dt, widths: []int{6, 6, 6, 6}, batch: 8, steps: 2, bucket: u * g}
			res := run(t, s)
			c := int64((u + n - 1) / n)
			for r, x := range res {
				if fmt.Sprint(x.ddp.buckets) != "[42 42 42]" {
					t.Fatalf("buckets %v, want three of 42", x.ddp.buckets)
				}
				want := bytesBy{3 * g * int64(n) * c, 3 * g * c, 3 * int64(8+4*b2i(dt != dtype.F32)) * c, 8*int64(n) + 2*g*int64(n+1)*c}
				if got := peaks(x.dev); got != want {
					t.Errorf("%s, %d ranks: rank %d peak bytes = %v, want %v", dt, n, r, got, want)
				}
				if cur := x.dev.ByTag[device.Communication].Current; cur != 8*int64(n) {
					t.Errorf("%s, %d ranks: rank %d holds %d communication bytes after the step, want %d", dt, n, r, cur, 8*n)
				}
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
