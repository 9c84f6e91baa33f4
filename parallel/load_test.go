package parallel_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/safetensors"
)

// normed is an MLP with a batch norm (a model with buffers).
func normed(b *nn.Builder) *nn.Sequential {
	return nn.NewSequential(nn.NewLinear(b, "fc0", 5, 7, true), nn.NewBatchNorm2d(b, "bn", 7, nn.BatchNormOptions{}),
		nn.Func{Name: "act", F: (*autograd.Tensor).Tanh}, nn.NewLinear(b, "fc1", 7, 3, true))
}

// TestLoadShardReadsOnlyTheRanksRanges saves a model built with one seed,
// builds it deferred with another on 1–4 ranks under stage 3 (buckets small
// enough that pieces cut parameters apart), loads the file into each
// rank's shard and checks that the gathered parameters and the buffers
// equal the saved ones bit for bit, that each rank read exactly its own
// elements of the parameters (the ranks together read every parameter
// byte once) plus every buffer, and that the rank's device never held
// more parameter bytes than its shard and buffers.
func TestLoadShardReadsOnlyTheRanksRanges(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		src := cpu.New(9, device.Options{})
		saved := normed(nn.NewBuilder(src, dt, 11))
		fill(saved, 3) // running statistics that are not the initial ones
		path := filepath.Join(t.TempDir(), "m.safetensors")
		if err := nn.Save(path, saved, nil); err != nil {
			t.Fatal(err)
		}
		want := values(saved)
		var params, buffers int64
		for _, p := range saved.Params() {
			if p.Buffer {
				buffers += p.T.Bytes()
			} else {
				params += p.T.Bytes()
			}
		}
		nn.Release(saved)
		for _, n := range []int{1, 2, 3, 4} {
			read := make([]int64, n)
			err := parallel.Run(parallel.NewGroup(n), func(cm parallel.Communicator) error {
				dev := cpu.New(cm.Rank(), device.Options{})
				b := nn.NewDeferredBuilder(dev, dt, 7)
				model := normed(b)
				defer nn.Release(model)
				d, err := parallel.NewDDP(cm, model, parallel.DDPConfig{Zero: 3, BucketBytes: 40, Builder: b})
				if err != nil {
					return err
				}
				defer d.Release()
				r, err := safetensors.OpenRanges(path)
				if err != nil {
					return err
				}
				defer r.Close()
				if err := d.LoadShardFrom(r); err != nil {
					return err
				}
				read[cm.Rank()] = r.Read
				shard := int64(d.ShardLen() * dt.Size())
				if got := dev.Stats().ByTag[device.Parameter].Peak; got != shard+buffers {
					return fmt.Errorf("rank %d: parameter peak %d B, want shard %d + buffers %d", cm.Rank(), got, shard, buffers)
				}
				if r.Read > shard+buffers {
					return fmt.Errorf("rank %d read %d B, more than its shard %d + buffers %d", cm.Rank(), r.Read, shard, buffers)
				}
				if err := d.Unshard(); err != nil {
					return err
				}
				defer d.Reshard()
				sameBits(t, fmt.Sprintf("%s, %d ranks, rank %d: loaded values", dt, n, cm.Rank()), values(model), want)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, v := range read {
				total += v
			}
			if w := params + int64(n)*buffers; total != w {
				t.Errorf("%s, %d ranks: read %v B, %d in all, want every parameter byte once and the buffers on each rank: %d", dt, n, read, total, w)
			}
		}
		src.Close()
	}
}

// fill sets every tensor of m to distinct values from seed.
func fill(m nn.Module, seed uint64) {
	for j, p := range m.Params() {
		v := make([]float64, p.T.Len())
		nn.Init{Kind: nn.InitUniform, A: 0.5, B: 1.5, Seed: seed, Stream: uint64(j)}.Values(v, 0)
		p.T.SetFloat64s(v)
	}
}
