// Command transformer trains a small GPT on bytes of text (by default the
// Go source tree that ships with Go) and reports exactly where its memory
// went.
//
//	go run ./examples/transformer                            # defaults
//	go run ./examples/transformer --layers 16 --amp --checkpoint
//	go run ./examples/transformer --steps 5 --report r.json
//
// See run.Main for every flag.
package main
