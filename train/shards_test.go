package train_test

import (
	"bytes"
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

// TestLoadModelReadsOnlyTheRanksRanges saves a model (a batch norm's
// running statistics among its tensors) and loads it with LoadModel into
// the model built with another seed on 2 and 3 ranks: under ZeRO-3 each
// rank reads exactly its elements of every parameter, Σ_k (min(u_k,
// (r+1)·p_k) − min(u_k, r·p_k)) of bucket k's u_k in pieces of p_k =
// ⌈u_k/N⌉, plus every buffer; under ZeRO-1 and on one device the whole
// file; and the values equal the saved ones bit for bit.
func TestLoadModelReadsOnlyTheRanksRanges(t *testing.T) {
	build := func(b *nn.Builder) *nn.Sequential {
		return nn.NewSequential(nn.NewLinear(b, "fc0", 5, 7, true), nn.NewBatchNorm2d(b, "bn", 7, nn.BatchNormOptions{}), nn.NewLinear(b, "fc1", 7, 3, true))
	}
	src := cpu.New(9, device.Options{})
	defer src.Close()
	saved := build(nn.NewBuilder(src, dtype.F32, 11))
	defer nn.Release(saved)
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := nn.Save(path, saved, nil); err != nil {
		t.Fatal(err)
	}
	want, whole, buffers := map[string][]byte{}, int64(0), int64(0)
	for _, p := range saved.Params() {
		want[p.Name], whole = p.T.Block().Bytes()[p.T.Offset()*4:(p.T.Offset()+p.T.Len())*4], whole+p.T.Bytes()
		if p.Buffer {
			buffers += p.T.Bytes()
		}
	}
	for _, tc := range []struct{ ranks, zero int }{{2, 3}, {3, 3}, {2, 1}} {
		err := parallel.Run(parallel.NewGroup(tc.ranks), func(c parallel.Communicator) (err error) {
			dev := cpu.New(c.Rank(), device.Options{})
			defer train.Close(dev, &err)
			b := nn.NewDeferredBuilder(dev, dtype.F32, 7)
			if tc.zero < 3 {
				b = nn.NewBuilder(dev, dtype.F32, 7)
			}
			model := build(b)
			defer nn.Release(model)
			d, err := parallel.NewDDP(c, model, parallel.DDPConfig{Zero: tc.zero, Builder: b, BucketBytes: 40})
			if err != nil {
				return err
			}
			defer d.Release()
			read, err := train.LoadModel(path, model, d)
			if err != nil {
				return err
			}
			exp := whole
			if tc.zero == 3 {
				exp = buffers
				for _, u := range d.Buckets() {
					p := (u + tc.ranks - 1) / tc.ranks
					exp += 4 * int64(min(u, (c.Rank()+1)*p)-min(u, c.Rank()*p))
				}
			}
			if read != exp {
				t.Errorf("%d ranks, ZeRO %d, rank %d: read %d bytes, want %d (the file's tensors: %d)", tc.ranks, tc.zero, c.Rank(), read, exp, whole)
			}
			if err := d.Unshard(); err != nil {
				return err
			}
			defer d.Reshard()
			for _, p := range model.Params() {
				if got := p.T.Block().Bytes()[p.T.Offset()*4 : (p.T.Offset()+p.T.Len())*4]; !bytes.Equal(got, want[p.Name]) {
					t.Errorf("%d ranks, ZeRO %d, rank %d: %s differs from the file", tc.ranks, tc.zero, c.Rank(), p.Name)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	one := cpu.New(0, device.Options{})
	defer one.Close()
	m := build(nn.NewBuilder(one, dtype.F32, 7))
	defer nn.Release(m)
	if read, err := train.LoadModel(path, m, nil); err != nil || read != whole {
		t.Errorf("one device: LoadModel read %d bytes, %v; want %d", read, err, whole)
	}
}
