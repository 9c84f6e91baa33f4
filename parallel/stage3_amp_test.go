package parallel_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// TestStage3AutocastHoldsOneBucketOfCasts trains three equal F32 layers
// (fc0, fc1, fc2: u = 42 elements, one bucket each, c = ⌈u/N⌉ per rank)
// under autocast — BF16, and F16 with a loss scaler — for three steps on
// 2 and 4 ranks. Stage 3 must give stage 2's losses and parameters bit for
// bit (stage 2's parameters stay bound, so its casts are cached for the
// whole step as without sharding; stage 3's are freed with their bucket
// and cast again, in backward too, from the same values). Its
// parameter-tag peak must be the shard, 3·4·c bytes, plus one bucket's
// 16-bit casts, 2·u bytes (stage 2 holds every layer's: 3·2·u beside the
// whole model), and only the shard may be left after training.
func TestStage3AutocastHoldsOneBucketOfCasts(t *testing.T) {
	const u = 6*6 + 6
	for _, ac := range []dtype.DType{dtype.BF16, dtype.F16} {
		for _, n := range []int{2, 4} {
			s := setup{ranks: n, zero: 2, dt: dtype.F32, amp: ac, widths: []int{6, 6, 6, 6}, batch: 8, steps: 3, bucket: 4 * u}
			stage2 := run(t, s)
			s.zero = 3
			stage3 := run(t, s)
			c := int64((u + n - 1) / n)
			shard, casts := 3*4*c, int64(2*u)
			for r := range n {
				name := fmt.Sprintf("%s autocast, %d ranks, rank %d", ac, n, r)
				if fmt.Sprint(stage3[r].losses) != fmt.Sprint(stage2[r].losses) {
					t.Errorf("%s: stage 3 losses %v, stage 2's %v", name, stage3[r].losses, stage2[r].losses)
				}
				if i, d := closeTo(stage3[r].params, stage2[r].params, 0); i >= 0 {
					t.Errorf("%s: parameter %d = %v, stage 2's %v (relative difference %.3g)", name, i, stage3[r].params[i], stage2[r].params[i], d)
				}
				p := stage3[r].dev.ByTag[device.Parameter]
				if p.Peak != shard+casts || p.Current != shard {
					t.Errorf("%s: parameter bytes peak %d, after training %d; want shard %d + one bucket's casts %d, then the shard",
						name, p.Peak, p.Current, shard, casts)
				}
			}
			t.Logf("%s, %d ranks: losses %v; parameter peak %d B (stage 2: %d B)", ac, n, stage3[0].losses,
				stage3[0].dev.ByTag[device.Parameter].Peak, stage2[0].dev.ByTag[device.Parameter].Peak)
		}
	}
}
