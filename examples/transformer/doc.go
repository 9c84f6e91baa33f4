// Command transformer trains a small GPT on bytes of text (by default the
// Go source tree that ships with Go) and reports exactly where its memory
// went.
//
//	go run ./examples/transformer                            # defaults
//	go run ./examples/transformer --layers 16 --amp --checkpoint
//	go run ./examples/transformer --steps 5 --report r.json
//	go run ./examples/transformer --steps 500 --stop-after 200 --save s.safetensors
//	go run ./examples/transformer --resume s.safetensors     # the same run, steps 201 to 500
//	go run ./examples/transformer --ranks 4 --zero 3 --stop-after 200 --save z.safetensors
//	go run ./examples/transformer --resume z.safetensors     # each rank resumes its shard
//	go run ./examples/transformer --ranks 4 --zero 3 --init m.safetensors  # each rank reads its ranges
//
// With --ranks, --zero or --offload, --save writes one shard per rank
// (z.safetensors, z.safetensors.rank1-of-4, …; train.SaveShard) and
// --resume reads them back into the same layout; train.ExportModel merges
// them into one model file for --init.
//
// Fine-tuning through adapters (package lora): --lora R trains rank-R
// adapters on the block Linears of the --init model, which stays frozen
// (no gradient, no optimizer state); --lora-base int8 stores its block
// Linears in INT8 (QLoRA-style); --lora-alpha, --lora-dropout and
// --lora-targets (all, attn, mlp, attn.c_attn, attn.c_proj, mlp.c_fc,
// mlp.c_proj) as in PEFT. One device only:
//
//	go run ./examples/transformer --init m.safetensors --data other/ --lora 8 --lora-base int8
//	go run ./examples/transformer --corpus-slice 0.8:1 --init m.safetensors --lora 8 --lora-base int8
//
// --corpus-slice lo:hi trains and validates on that fraction of the
// corpus (data.Text.Slice), e.g. a base on 0:0.8 fine-tuned on 0.8:1.
//
// Every flag is checked before any work starts (-help lists them with
// their ranges). --resume takes the snapshot's flags; one that changes the
// run (--steps, --batch, --lr, --context, --amp, …) needs --override. Exit
// status: 0 success, 1 error, 3 out of memory (its explanation on stderr),
// 4 a --mem-alert stopped the run (with a resumable snapshot), 64 a bad
// flag; see package train. See run.Main for every flag.
package main
