package train_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/safetensors"
	"github.com/headroom-ml/headroom/train"
)

// TestStage3SaveGathersNothing saves a ZeRO-3 run of 2 ranks after one
// step: while it saves, a rank's communication tag grows by Exchange's
// 2 F32 words only (4·N bytes beside AllSum's standing 8·N: no bucket is
// gathered), its parameter tag stays at its shard, and its file holds its
// shard — 4·S bytes of "model." tensors — and the optimizer's m and v of
// it, 8·S bytes.
func TestStage3SaveGathersNothing(t *testing.T) {
	const n, in, hidden, classes, m = 2, 12, 40, 5, 3
	path := filepath.Join(t.TempDir(), "s")
	err := parallel.Run(parallel.NewGroup(n), func(c parallel.Communicator) (err error) {
		dev := cpu.New(c.Rank(), device.Options{})
		defer train.Close(dev, &err)
		b := nn.NewDeferredBuilder(dev, dtype.F32, 3)
		model := nn.NewSequential(nn.NewLinear(b, "0", in, hidden, true), nn.ReLU("1"), nn.NewLinear(b, "2", hidden, classes, true))
		defer nn.Release(model)
		d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: 3, Builder: b, BucketBytes: 4 * 200})
		if err != nil {
			return err
		}
		defer d.Release()
		opt, err := parallel.NewAdamW(d, optim.AdamConfig{LR: 0.01})
		if err != nil {
			return err
		}
		defer opt.Release()
		st := &train.Stepper{Opt: opt, Sync: d, Accum: 1}
		xs, ys := make([]float32, m*in), make([]int64, m)
		for i := range xs {
			xs[i] = float32(i%7) - 3
		}
		for i := range ys {
			ys[i] = int64(i % classes)
		}
		if _, _, err := st.Step(func(sc *autograd.Scope, _ int) *autograd.Tensor {
			x := sc.FromFloat32s(dev, []int{m, in}, xs)
			return autograd.CrossEntropy(model.Forward(x), sc.FromInt64s(dev, []int{m}, ys), autograd.CEOptions{})
		}); err != nil {
			return err
		}
		dev.ResetPeak()
		before := train.Peaks(dev.Stats())
		if err := train.SaveShard(path, d, model, opt, train.Snapshot{Step: 1}); err != nil {
			return err
		}
		p := train.Peaks(dev.Stats())
		if p.Communication != 8*n+4*n || before.Communication != 8*n || p.Parameter != int64(4*d.ShardLen()) {
			t.Errorf("rank %d: saving peaked at %d communication bytes (%d before), %d parameter bytes; want %d, %d and 4·S = %d",
				c.Rank(), p.Communication, before.Communication, p.Parameter, 8*n+4*n, 8*n, 4*d.ShardLen())
		}
		f, err := safetensors.ReadFile(train.ShardPath(path, c.Rank(), n))
		if err != nil {
			return err
		}
		var model4, optim4 int
		for name, ft := range f.Tensors {
			switch {
			case strings.HasPrefix(name, "model."):
				model4 += len(ft.Data)
			case strings.HasPrefix(name, "optim."):
				optim4 += len(ft.Data)
			}
		}
		if model4 != 4*d.ShardLen() || optim4 != 8*d.ShardLen() || len(d.Buckets()) < 2 {
			t.Errorf("rank %d: the shard file holds %d model and %d optimizer bytes over %d buckets; want 4·S = %d and 8·S = %d over ≥ 2",
				c.Rank(), model4, optim4, len(d.Buckets()), 4*d.ShardLen(), 8*d.ShardLen())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
