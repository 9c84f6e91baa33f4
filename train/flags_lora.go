package train

import "flag"

// LoRAFlags are the fine-tuning flags of a program that trains low-rank
// adapters over a frozen base (package lora; issue #19): --lora,
// --lora-alpha, --lora-dropout, --lora-targets, --lora-base. A program
// registers them with RegisterLoRA and converts them to a lora.Config
// itself (train sits beside lora in the package layers and does not
// import it).
type LoRAFlags struct {
	// LoRA is the adapters' rank r (0: no adapters, full fine-tuning).
	LoRA int
	// LoRAAlpha scales the update by alpha/r (0: r, a scale of 1).
	LoRAAlpha float64
	// LoRADropout is the adapters' input dropout, in [0, 1).
	LoRADropout float64
	// LoRATargets is a comma-separated list of block Linears (lora.Config.Targets).
	LoRATargets string
	// LoRABase is the frozen base's storage: "float" or "int8".
	LoRABase string
}

// RegisterLoRA adds the LoRAFlags to fs.
func (l *LoRAFlags) RegisterLoRA(fs *flag.FlagSet) {
	fs.IntVar(&l.LoRA, "lora", 0, "fine-tune rank-R adapters over the frozen model (LoRA; 0: train every parameter); with --init, the model to adapt")
	fs.Float64Var(&l.LoRAAlpha, "lora-alpha", 0, "adapter scale alpha: updates are scaled by alpha/R (0: R)")
	fs.Float64Var(&l.LoRADropout, "lora-dropout", 0, "dropout of the adapters' input, in [0, 1)")
	fs.StringVar(&l.LoRATargets, "lora-targets", "all", "block Linears that get adapters, comma-separated: attn.c_attn (q, k, v together), q, k, v (thirds of it), attn.c_proj, mlp.c_fc, mlp.c_proj, or all, attn, mlp")
	fs.StringVar(&l.LoRABase, "lora-base", "float", "storage of the frozen base's block Linears: float, or int8 (QLoRA-style: INT8 weights dequantised per tile in the matmul)")
}

// CheckLoRA refuses --lora below 0 and the --lora-… flags without --lora.
func (l *LoRAFlags) CheckLoRA(set func(name string) bool) error {
	off := l.LoRA == 0
	return First(
		Want(l.LoRA >= 0, "lora", l.LoRA, "a rank ≥ 1, or 0 for no adapters"),
		Want(!off || !set("lora-alpha"), "lora-alpha", l.LoRAAlpha, "--lora R with --lora-alpha"),
		Want(!off || !set("lora-dropout"), "lora-dropout", l.LoRADropout, "--lora R with --lora-dropout"),
		Want(!off || !set("lora-targets"), "lora-targets", l.LoRATargets, "--lora R with --lora-targets"),
		Want(!off || !set("lora-base"), "lora-base", l.LoRABase, "--lora R with --lora-base"),
	)
}
