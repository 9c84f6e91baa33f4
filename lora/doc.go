// Package lora fine-tunes a GPT through low-rank adapters (LoRA, Hu et al.
// 2021) over a frozen base: it trades a restricted update (rank r per
// adapted Linear) for gradients and optimizer state that cover only the
// adapters, and, with an INT8 base (QLoRA-style, Dettmers et al. 2023),
// a base a quarter of its F32 size.
//
//	g, err := nn.NewGPT(b, "gpt", cfg, gen)            // then nn.Load(path, g): the trained model
//	m, err := lora.Apply(g, lora.Config{Rank: 8, Alpha: 16, Base: lora.Int8}, gen)
//	defer nn.Release(m)                                 // m owns g
//	opt, err := optim.NewAdamW(nn.Trainable(m), optim.AdamConfig{LR: 1e-3}) // the adapters only
//	… loss := m.Loss(idx, targets); loss.Backward(); opt.Step() …
//	err = m.SaveAdapters("adapter_model.safetensors")   // PEFT names, adapters alone
//	merged, err := m.Merge()                            // W += (α/r)·B·A: an nn.GPT (F32 from an Int8 base)
//
// # What it computes
//
// Every targeted block Linear W (Out, In) becomes y = W·x + b + (α/r)·B·A·
// drop(x), A (r, In) drawn U(±1/√In) (PEFT's kaiming_uniform(a=√5)), B
// (Out, r) zero, so the adapted model equals the base at step 0 (bit for
// bit: the tests check). Apply sets RequiresGrad false on every tensor of
// the base: backward computes no gradient for it (only the activation
// gradients that flow through it to earlier adapters), and Params lists
// it with Buffer set, so nn.Trainable(m), and any optimizer made from it,
// holds the adapters alone.
//
// # Knobs (Config; the zero value but Rank is the default)
//
//   - Rank r ≥ 1 (no default).
//   - Alpha: the update is scaled by Alpha/r; 0 means Alpha = r (scale 1).
//     PEFT's lora_alpha.
//   - Dropout on the adapter's input, in [0, 1); default 0. PEFT's
//     lora_dropout.
//   - Targets: "attn.c_attn" (q, k and v: GPT-2's fused Linear, like PEFT's
//     target_modules=["c_attn"]), "attn.c_proj", "mlp.c_fc", "mlp.c_proj",
//     or the shorthands all, attn, mlp, qkv (= c_attn), c_fc; default all
//     four. "q", "k", "v" adapt only those thirds of c_attn's output (the
//     LoRA paper's W_q, W_v: Targets q, v): one adapter on c_attn whose B
//     has rows for the named thirds only (n·C, r), its update spread into
//     the output with zeros elsewhere; its file names are c_attn's, but
//     PEFT's GPT-2 has no such split, so such a B loads only here. The embeddings, the layer norms and the head stay frozen
//     without adapters.
//   - Base: Float (default) keeps the base in its dtype; Int8 stores every
//     block Linear as quant.FrozenLinear (INT8 weight, one F32 scale per
//     output feature, this package's quantizer), dequantised one tile of at
//     most quant.FrozenTile elements at a time inside the matmul; the
//     adapters are F32 then.
//   - Seed of A's initial values (default 0).
//
// # Memory formula
//
// With P the base's parameter count, P_L = Σ In·Out over the block
// Linears, s the parameter dtype's size, n_a the adapted Linears and
// Σ_a = Σ r·(In+Out) over them (the adapters' elements):
//
//   - parameters: P·s + Σ_a·s (Float base), or (P − P_L)·4 + P_L +
//     4·Σ Out (one F32 scale per output feature) + 4·Σ_a (Int8 base);
//   - gradients: Σ_a·s (the base gets none);
//   - AdamW state: 2·Σ_a·4 (m and v);
//   - activations: the base's, plus per adapted Linear on M rows its
//     result M·Out·s and the scaled low-rank activation M·r·s (saved by B's
//     product), plus M·In·s with dropout (the dropped input A's product
//     saves); an Int8 base's Linears save x alive already, as float ones
//     //     do, and borrow 4·min(Out, max(1, 65536/In))·In bytes of workspace in
//     their forward and backward.
//
// For a GPT of width C and L blocks with every Linear adapted, Σ_a =
// L·r·(4C + 2C + 5C + 5C) = 16·L·r·C, against 12·L·C² block weights.
//
// # Files
//
// SaveAdapters writes only A and B, named as PEFT's save_pretrained
// names them in adapter_model.safetensors:
// base_model.model.<module path>.lora_A.weight and .lora_B.weight, the
// module path without the model's name (transformer.h.0.attn.c_attn:
// Hugging Face GPT-2's), with the rank, alpha and targets as metadata;
// LoadAdapters reads such a file (its rank, when recorded, must match).
// The base is saved and loaded as before (nn.Save of the base before
// Apply, or nn.Save of m: adapters and base by their own names).
//
// # Merging
//
// Merge adds (α/r)·B·A into each adapted weight and returns the base
// nn.GPT, trainable again; its outputs equal the adapted model's to
// rounding (the tests: within 1e-12 in F64). An Int8 base is dequantised
// first (W = q·s into new F32 Linears, the INT8 tensors released), so the
// merged model is F32 (within 1e-5 of the adapted model's largest logit).
package lora
