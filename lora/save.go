package lora

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/nn"
)

// PEFTPrefix starts every adapter tensor's name in an adapter file, as
// PEFT's save_pretrained writes adapter_model.safetensors:
// base_model.model.<module path>.lora_A.weight (and lora_B.weight).
const PEFTPrefix = "base_model.model."

// Metadata keys of an adapter file.
const (
	RankKey    = "headroom.lora.rank"
	AlphaKey   = "headroom.lora.alpha"
	TargetsKey = "headroom.lora.targets"
)

// AdapterTensors returns the adapters by their PEFT names: PEFTPrefix, the
// Linear's module path without the model's name, then .lora_A.weight or
// .lora_B.weight.
func (m *GPT) AdapterTensors() map[string]*autograd.Tensor {
	ts := map[string]*autograd.Tensor{}
	for _, a := range m.Adapters {
		ts[PEFTPrefix+m.path(a.A.Name())] = a.A
		ts[PEFTPrefix+m.path(a.B.Name())] = a.B
	}
	return ts
}

// SaveAdapters writes the adapters alone, with PEFT's names, to a
// safetensors file at path (atomically, with headroom's checksums), with
// the rank, alpha and targets as metadata: a file of
// 2·Σ(Rank·(In+Out))·s bytes of tensor data, whatever the base's size.
func (m *GPT) SaveAdapters(path string) error {
	if m.merged {
		return fmt.Errorf("lora.SaveAdapters %s: the adapters were merged", path)
	}
	mods, _ := m.Config.Modules()
	meta := map[string]string{
		RankKey:    strconv.Itoa(m.Config.Rank),
		AlphaKey:   strconv.FormatFloat(m.Config.Alpha, 'g', -1, 64),
		TargetsKey: strings.Join(mods, ","),
	}
	if err := nn.WriteTensors(path, m.AdapterTensors(), meta); err != nil {
		return fmt.Errorf("lora.SaveAdapters: %w", err)
	}
	return nil
}

// LoadAdapters reads a file of adapters (SaveAdapters', or PEFT's
// adapter_model.safetensors of the same model) into m's adapters. The file
// must hold exactly m's adapter names with their shapes and dtypes, and
// its rank, when recorded, must be m's; otherwise it returns an error
// listing the differences and changes nothing.
func (m *GPT) LoadAdapters(path string) error {
	f, err := nn.ReadTensors(path)
	if err != nil {
		return fmt.Errorf("lora.LoadAdapters: %w", err)
	}
	if r, ok := f.Metadata[RankKey]; ok && r != strconv.Itoa(m.Config.Rank) {
		return fmt.Errorf("lora.LoadAdapters %s: the file's adapters have rank %s, the model's %d", path, r, m.Config.Rank)
	}
	if err := nn.AssignTensors(m.AdapterTensors(), f, ""); err != nil {
		return fmt.Errorf("lora.LoadAdapters %s: %w", path, err)
	}
	return nil
}
