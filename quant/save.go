package quant

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/safetensors"
)

// Metadata keys Save writes and Load checks.
const (
	// FormatKey names the file's format; its value is Format.
	FormatKey = "headroom.quant.format"
	// ActivationsKey holds the model's activation mode ("dynamic" or
	// "static").
	ActivationsKey = "headroom.quant.activations"
	// Format is the format Save writes: per-output-channel symmetric int8
	// weights (I8) with F32 scales named <layer>.weight_scale, F32 biases
	// (batch-norms folded in), F32 <layer>.input_scale for static
	// activations, and the model's F32 tensors (embeddings, layer norms).
	Format = "int8-symmetric-per-channel/1"
)

// Activations returns the model's activation mode.
func (s *state) Activations() Activations { return s.cfg.Activations }

// Save writes a converted model's tensors, each by name in its own dtype
// (I8 weights, F32 scales, biases and the rest), to a safetensors file at
// path, with meta (may be nil) plus FormatKey and ActivationsKey. The
// write is atomic: if Save fails, the file that was at path is unchanged.
func Save(path string, m Model, meta map[string]string) error {
	if !m.Converted() {
		return fmt.Errorf("quant.Save %s: the model is prepared, not converted: Convert it first (a prepared model's float parameters save with nn.Save)", path)
	}
	md := maps.Clone(meta)
	if md == nil {
		md = map[string]string{}
	}
	md[FormatKey] = Format
	md[ActivationsKey] = activationsOf(m).String()
	if err := nn.Save(path, m, md); err != nil {
		return fmt.Errorf("quant.Save: %w", err)
	}
	return nil
}

// Load reads a file written by Save into m, a converted model with the
// same architecture and activation mode (from Convert or NewLike), and
// returns the file's metadata. A file that cannot be read or decoded, of
// another format or activation mode, or whose tensors do not match m's
// names, dtypes and shapes exactly returns an error listing the
// differences and changes nothing.
func Load(path string, m Model) (map[string]string, error) {
	if !m.Converted() {
		return nil, fmt.Errorf("quant.Load %s: the model is prepared, not converted: load into a converted model (Convert or NewLike)", path)
	}
	f, err := nn.ReadTensors(path)
	if err != nil {
		return nil, fmt.Errorf("quant.Load: %w", err)
	}
	if got := f.Metadata[FormatKey]; got != Format {
		return nil, fmt.Errorf("quant.Load %s: metadata %s = %q, want %q (not a file written by quant.Save)", path, FormatKey, got, Format)
	}
	if got, want := f.Metadata[ActivationsKey], activationsOf(m).String(); got != want {
		return nil, fmt.Errorf("quant.Load %s: the file holds a model with %q activations, the destination has %q", path, got, want)
	}
	ts, err := nn.StateTensors(m, "")
	if err != nil {
		return nil, fmt.Errorf("quant.Load %s: %w", path, err)
	}
	if err := nn.CheckTensors(ts, f, ""); err != nil {
		return nil, fmt.Errorf("quant.Load %s: %w", path, err)
	}
	if err := checkScales(f); err != nil {
		return nil, fmt.Errorf("quant.Load %s: %w", path, err)
	}
	if err := nn.AssignTensors(ts, f, ""); err != nil {
		return nil, fmt.Errorf("quant.Load %s: %w", path, err)
	}
	if f.Metadata == nil {
		return map[string]string{}, nil
	}
	return f.Metadata, nil
}

// activationsOf returns a model's activation mode.
func activationsOf(m Model) Activations {
	if a, ok := m.(interface{ Activations() Activations }); ok {
		return a.Activations()
	}
	return Dynamic
}

// checkScales returns an error naming the first scale in f (a tensor named
// *.weight_scale or *.input_scale) that is not a finite number > 0: a
// file with such a scale is corrupt, and would compute garbage.
func checkScales(f *safetensors.File) error {
	names := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		if strings.HasSuffix(n, ".weight_scale") || strings.HasSuffix(n, ".input_scale") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		t := f.Tensors[n]
		if t.DType != dtype.F32 || len(t.Data)%4 != 0 {
			return fmt.Errorf("scale %q: %s with %d bytes, want f32", n, t.DType, len(t.Data))
		}
		for i := 0; i < len(t.Data); i += 4 {
			v := math.Float32frombits(binary.LittleEndian.Uint32(t.Data[i:]))
			if !(v > 0) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("scale %q: element %d is %g, want a finite value > 0 (corrupt file)", n, i/4, v)
			}
		}
	}
	return nil
}
