package lora

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Base is how the frozen base's Linears are stored.
type Base int

const (
	// Float keeps the base in its own float dtype (LoRA).
	Float Base = iota
	// Int8 stores every block Linear of the base as an INT8 weight with one
	// F32 scale per output feature (quant.FrozenLinear), dequantised per
	// tile in the matmul (QLoRA-style); embeddings, layer norms and the
	// head stay float.
	Int8
)

// String returns "float" or "int8".
func (b Base) String() string {
	if b == Int8 {
		return "int8"
	}
	return "float"
}

// ParseBase reads "float" (or "") and "int8".
func ParseBase(s string) (Base, error) {
	switch s {
	case "", "float":
		return Float, nil
	case "int8":
		return Int8, nil
	}
	return Float, fmt.Errorf("lora base %q: want float or int8", s)
}

// Modules are the Linears of a GPT block that adapters can target, by
// their path inside the block (nanoGPT's and Hugging Face GPT-2's names).
// attn.c_attn makes q, k and v together (one fused Linear, as in GPT-2):
// targeting it adapts all three, as PEFT's target_modules=["c_attn"] does.
var Modules = []string{"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}

// Parts are the target names of q, k and v alone: the row thirds of
// attn.c_attn's output. An adapter on some of them is one adapter on
// c_attn whose B has rows for those parts only (n·C, r).
var Parts = []string{"q", "k", "v"}

// groups are the shorthand target names.
var groups = map[string][]string{
	"all":    Modules,
	"attn":   Modules[:2],
	"mlp":    Modules[2:],
	"qkv":    Modules[:1],
	"c_attn": Modules[:1],
	"c_fc":   Modules[2:3],
}

// Config configures Apply. The zero value but Rank is the default: alpha
// = Rank (scale 1), no dropout, every block Linear targeted, a float base,
// seed 0.
type Config struct {
	// Rank is r, the adapters' inner width (≥ 1).
	Rank int
	// Alpha scales the update by Alpha/Rank (0: Rank, a scale of 1; PEFT's
	// lora_alpha).
	Alpha float64
	// Dropout is the probability of dropping the adapter's input (PEFT's
	// lora_dropout), in [0, 1); it needs Apply's generator.
	Dropout float64
	// Targets names the block Linears that get adapters: entries of
	// Modules, q, k or v (some thirds of c_attn's output: see Parts), or
	// the shorthands all, attn (c_attn and attn.c_proj), mlp (c_fc and
	// mlp.c_proj), qkv or c_attn, c_fc (nil: all).
	Targets []string
	// Base is the frozen base's storage (Float or Int8).
	Base Base
	// Seed seeds the A matrices' initial values (B starts at zero).
	Seed uint64
}

// Scale returns Alpha/Rank (1 when Alpha is 0).
func (c Config) Scale() float64 {
	if c.Alpha == 0 {
		return 1
	}
	return c.Alpha / float64(c.Rank)
}

// Modules returns the block paths c.Targets selects, in Modules' order.
func (c Config) Modules() ([]string, error) {
	if len(c.Targets) == 0 {
		return slices.Clone(Modules), nil
	}
	on := map[string]bool{}
	for _, t := range c.Targets {
		t = strings.TrimSpace(t)
		switch {
		case groups[t] != nil:
			for _, m := range groups[t] {
				on[m] = true
			}
		case slices.Contains(Modules, t):
			on[t] = true
		case slices.Contains(Parts, t):
			on[Modules[0]] = true
		default:
			return nil, fmt.Errorf("lora target %q: want one of %s, q, k, v, or all, attn, mlp, qkv, c_attn, c_fc", t, strings.Join(Modules, ", "))
		}
	}
	var out []string
	for _, m := range Modules {
		if on[m] {
			out = append(out, m)
		}
	}
	return out, nil
}

// parts returns which of q, k, v an adapter on attn.c_attn covers: all
// three unless the targets name some of them and not c_attn as a whole.
func (c Config) parts() [3]bool {
	var p [3]bool
	whole := len(c.Targets) == 0
	for _, t := range c.Targets {
		t = strings.TrimSpace(t)
		if i := slices.Index(Parts, t); i >= 0 {
			p[i] = true
		} else if slices.Contains(groups[t], Modules[0]) || t == Modules[0] {
			whole = true
		}
	}
	if whole {
		return [3]bool{true, true, true}
	}
	return p
}

// Check returns an error naming the first field out of range.
func (c Config) Check() error {
	switch {
	case c.Rank < 1:
		return fmt.Errorf("lora rank %d: want ≥ 1", c.Rank)
	case !(c.Alpha >= 0) || math.IsInf(c.Alpha, 0):
		return fmt.Errorf("lora alpha %g: want a finite value ≥ 0 (0: the rank)", c.Alpha)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("lora dropout %g: want a probability in [0, 1)", c.Dropout)
	case c.Base != Float && c.Base != Int8:
		return fmt.Errorf("lora base %d: want Float or Int8", c.Base)
	}
	_, err := c.Modules()
	return err
}
