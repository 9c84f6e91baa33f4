// Package train holds what the example programs share and what a Go
// program that trains a model with headroom usually needs around its loop:
// the common command-line flags, the JSON run report, a progress display,
// resumable snapshots, and the exit path that turns an out-of-memory error
// into its explanation instead of a panic trace.
//
// Snapshots are safetensors files with a CRC-32C per tensor and of the
// metadata (see package safetensors, Checksums): LoadSnapshot refuses a
// corrupt one, naming the tensor, before it changes the model or the
// optimizer. ReadReport reads a run report back and refuses one whose
// numbers no run writes (Report.Check, PeakBytes.Check, CheckStats).
package train
