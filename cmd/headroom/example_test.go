package main

import "os"

// A small GPT over two ranks with ZeRO stage 2: each rank holds all the
// parameters, half the gradients and half the Adam state. The first table
// is the moment of the peak; the second each tag's own peak.
func Example_plan() {
	run([]string{"plan", "--model", "transformer", "--batch", "8", "--seq", "16", "--ranks", "2", "--zero", "2"}, os.Stdout, os.Stderr)
	// Output:
	// transformer: 834,304 parameters, batch 8 × 16 tokens; adamw; 2 ranks, ZeRO stage 2
	// planned for the cpu device
	//
	// memory at the peak (what each tag held when the total peaked: the columns add up to the peak)
	// rank               peak    parameter     gradient    optimizer   activation    workspace        comm.        other
	// 0–1           11.18 MiB     3.18 MiB     1.59 MiB     3.18 MiB     1.92 MiB   322.00 KiB  1014.77 KiB          0 B
	//
	// each tag's own peak (its largest, reached at another moment than the total's: these need not add up)
	// rank       model states    parameter     gradient    optimizer   activation    workspace        comm.        other
	// 0–1            7.96 MiB     3.18 MiB     1.59 MiB     3.18 MiB     2.26 MiB   450.00 KiB  1017.02 KiB          0 B
	//
	// model states of rank 0: 7.96 MiB = parameters 3.18 MiB + gradients 1.59 MiB + optimizer 3.18 MiB; peak 11.18 MiB
	// model states per parameter rank 0 trains (834,304): 10.0000 B = 4.0000 + 2.0000 + 4.0000
}
