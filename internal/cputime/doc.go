// Package cputime reads the processor time this process or thread has
// used, for benchmarks on a shared machine: unlike wall time it leaves out
// the time other processes held the cores. It has no knobs and allocates
// nothing; where the system cannot tell, the functions return 0 and
// callers fall back to wall time.
package cputime
