// Package plan predicts a training step's memory before it runs: it runs
// the real step — the same model code, optimizer, techniques and
// data-parallel engine as a training program — on meta devices, which
// allocate exactly what cpu devices do and compute nothing. The result is
// every rank's exact peak bytes by tag for models far larger than the
// machine (GPT-3 175B over 64 ranks plans in seconds); for a model small
// enough to run, the prediction equals the cpu device's measurement byte
// for byte.
//
// Fit searches batch sizes and technique combinations for the largest
// batch that fits a capacity, cheapest first.
package plan
