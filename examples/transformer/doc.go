// Command transformer trains a small GPT on bytes of text (by default the
// Go source tree that ships with Go) and reports exactly where its memory
// went.
//
//	go run ./examples/transformer                            # defaults
//	go run ./examples/transformer --layers 16 --amp --checkpoint
//	go run ./examples/transformer --steps 5 --report r.json
//	go run ./examples/transformer --steps 500 --stop-after 200 --save s.safetensors
//	go run ./examples/transformer --resume s.safetensors     # the same run, steps 201 to 500
//
// Every flag is checked before any work starts (-help lists them with
// their ranges). --resume takes the snapshot's flags; one that changes the
// run (--steps, --batch, --lr, --context, --amp, …) needs --override. Exit
// status: 0 success, 1 error, 3 out of memory (its explanation on stderr),
// 4 a --mem-alert stopped the run (with a resumable snapshot), 64 a bad
// flag; see package train. See run.Main for every flag.
package main
