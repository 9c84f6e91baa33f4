package lora_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/lora"
	"github.com/headroom-ml/headroom/nn"
)

// TestAdapterFile saves trained-looking adapters with PEFT's names, loads
// them into a model whose adapters started elsewhere (another seed) and
// checks every value bit for bit, the names (base_model.model.<path
// without the model's name>.lora_A.weight), that the file holds the
// adapters alone, and that a file of another rank is refused with nothing
// changed.
func TestAdapterFile(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	path := filepath.Join(t.TempDir(), "adapter_model.safetensors")
	src := apply(t, newGPT(t, dev, dtype.F32, 12), lora.Config{Rank: 2, Alpha: 4, Seed: 1})
	defer nn.Release(src)
	randomB(src, 13)
	if err := src.SaveAdapters(path); err != nil {
		t.Fatal(err)
	}
	f, err := nn.ReadTensors(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range f.Tensors {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := 2 * len(src.Adapters); len(names) != want {
		t.Errorf("the file holds %d tensors, want the %d adapter tensors", len(names), want)
	}
	const first = "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight"
	if !slices.Contains(names, first) {
		t.Errorf("file names %v: want PEFT's, e.g. %s", names[:2], first)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, lora.PEFTPrefix+"transformer.h.") || !(strings.HasSuffix(n, ".lora_A.weight") || strings.HasSuffix(n, ".lora_B.weight")) {
			t.Errorf("tensor %q: want base_model.model.transformer.h.….lora_{A,B}.weight", n)
		}
	}
	dst := apply(t, newGPT(t, dev, dtype.F32, 12), lora.Config{Rank: 2, Alpha: 4, Seed: 2})
	defer nn.Release(dst)
	if err := dst.LoadAdapters(path); err != nil {
		t.Fatal(err)
	}
	for i, a := range src.Adapters {
		b := dst.Adapters[i]
		if !slices.Equal(a.A.Float64s(), b.A.Float64s()) || !slices.Equal(a.B.Float64s(), b.B.Float64s()) {
			t.Errorf("%s: loaded adapters differ from the saved ones", a.Name)
		}
	}
	other := apply(t, newGPT(t, dev, dtype.F32, 12), lora.Config{Rank: 3})
	defer nn.Release(other)
	a0 := other.Adapters[0].A.Float64s()
	err = other.LoadAdapters(path)
	if err == nil || !strings.Contains(err.Error(), "rank 2, the model's 3") {
		t.Errorf("loading rank-2 adapters into a rank-3 model: %v; want an error naming both ranks", err)
	}
	if !slices.Equal(a0, other.Adapters[0].A.Float64s()) {
		t.Errorf("a refused load changed the adapters")
	}
}
