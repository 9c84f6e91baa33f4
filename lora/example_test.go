package lora_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
)

// Example puts rank-4 adapters on a small GPT with an INT8 base, makes
// the optimizer over the adapters alone and saves them with PEFT's names.
func Example() {
	dev := cpu.New(0, device.Options{})
	cfg := nn.GPTConfig{Vocab: 256, Context: 32, Layers: 2, Heads: 2, Width: 64, Bias: true, TieEmbeddings: true}
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 1), "gpt", cfg, nil)
	if err != nil {
		panic(err)
	}
	m, err := lora.Apply(g, lora.Config{Rank: 4, Alpha: 8, Base: lora.Int8}, nil)
	if err != nil {
		panic(err)
	}
	defer nn.Release(m)
	opt, err := optim.NewAdamW(nn.Trainable(m), optim.AdamConfig{LR: 1e-3})
	if err != nil {
		panic(err)
	}
	defer opt.Release()
	fmt.Printf("%d adapters, %d trainable parameters (16·L·r·C = %d), optimizer over %d tensors\n",
		len(m.Adapters), nn.Count(m), 16*2*4*64, len(opt.Params()))
	dir, err := os.MkdirTemp("", "lora")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "adapter_model.safetensors")
	if err := m.SaveAdapters(path); err != nil {
		panic(err)
	}
	f, err := nn.ReadTensors(path)
	if err != nil {
		panic(err)
	}
	_, ok := f.Tensors["base_model.model.transformer.h.1.mlp.c_proj.lora_B.weight"]
	fmt.Println(len(f.Tensors), "tensors in the file; PEFT names:", ok)
	merged, err := m.Merge() // an F32 nn.GPT: the INT8 base dequantised, the updates added
	if err != nil {
		panic(err)
	}
	fmt.Println(nn.Count(merged), "parameters in the merged model,", merged.Blocks[0].MLP.FC.Weight.DType())
	// Output:
	// 8 adapters, 8192 trainable parameters (16·L·r·C = 8192), optimizer over 16 tensors
	// 16 tensors in the file; PEFT names: true
	// 118528 parameters in the merged model, f32
}
