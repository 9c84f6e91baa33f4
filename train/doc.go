// Package train holds what the example programs share and what a Go
// program that trains a model with headroom usually needs around its loop:
// the common command-line flags, the JSON run report, a progress display,
// resumable snapshots, and the exit path that turns an out-of-memory error
// into its explanation instead of a panic trace.
package train
