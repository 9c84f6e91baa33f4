package train_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// Two tensor-parallel ranks train a tiny GPT for 2 steps and save a split
// snapshot (one file per rank); a fresh pair of ranks loads it and is at
// step 2 with the same parameters.
func ExampleSplitGPT_Save() {
	dir, _ := os.MkdirTemp("", "split")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "snap")
	cfg := nn.GPTConfig{Vocab: 8, Context: 4, Layers: 1, Heads: 2, Width: 8}
	sc := train.SplitConfig{TP: 2, PP: 1, DP: 1, Micro: 1, Batch: 1, Seq: 4}
	tokens := func(s *autograd.Scope, dev *device.Device) *autograd.Tensor {
		return s.FromInt64s(dev, []int{1, 4}, []int64{1, 2, 3, 4})
	}
	targets := func(s *autograd.Scope, dev *device.Device) *autograd.Tensor {
		return s.FromInt64s(dev, []int{4}, []int64{2, 3, 4, 5})
	}
	var saved, loaded [2]string
	var steps [2]int
	run := func(load bool) error {
		meshes, err := parallel.NewMeshGroup(parallel.MeshShape{Data: 1, Tensor: 2, Pipe: 1})
		if err != nil {
			return err
		}
		return parallel.RunMesh(meshes, func(m *parallel.Mesh) error {
			dev := cpu.New(m.World.Rank(), device.Options{})
			g, err := train.NewSplitGPT(m, nn.NewBuilder(dev, dtype.F32, 1), "gpt", cfg, autograd.NewGenerator(1), sc,
				func(ps []nn.Param, _ *parallel.DDP) (optim.Optimizer, error) {
					return optim.NewAdamW(ps, optim.AdamConfig{LR: 0.01})
				})
			if err != nil {
				return err
			}
			defer g.Release()
			r := m.World.Rank()
			if load {
				if _, err := g.Load(path, m); err != nil {
					return err
				}
				loaded[r], steps[r] = fmt.Sprint(g.Params()[0].T.Float32s()), g.Steps()
				return nil
			}
			for range 2 {
				if _, err := g.Step(func(s *autograd.Scope, _ int) *autograd.Tensor { return tokens(s, dev) },
					func(s *autograd.Scope, _ int) *autograd.Tensor { return targets(s, dev) }); err != nil {
					return err
				}
			}
			saved[r] = fmt.Sprint(g.Params()[0].T.Float32s())
			return g.Save(path, m, train.Snapshot{})
		})
	}
	if err := run(false); err != nil {
		fmt.Println(err)
		return
	}
	if err := run(true); err != nil {
		fmt.Println(err)
		return
	}
	_, err := os.Stat(train.ShardPath(path, 1, 2))
	fmt.Println("rank 1's file:", err == nil)
	fmt.Println("steps after loading:", steps)
	fmt.Println("same parameters:", saved == loaded)
	// Output:
	// rank 1's file: true
	// steps after loading: [2 2]
	// same parameters: true
}
