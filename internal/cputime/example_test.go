package cputime_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/internal/cputime"
)

// Time a piece of work by the processor time it used.
func Example() {
	start := cputime.Process()
	sum := 0
	for i := range 1_000_000 {
		sum += i
	}
	used := cputime.Process() - start
	fmt.Println(sum, used >= 0)
	// Output: 499999500000 true
}
