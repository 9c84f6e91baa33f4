package parallel

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestFailedCopyFailsTheCollectiveOnEveryRank: rank 1's device copy
// fails (a panicking Read or Write, as a cuda KernelError is raised)
// inside a collective's work; rank 1 does not leave the collective's
// phases early, and every rank's collective returns rank 1's error. The
// next collective succeeds again.
func TestFailedCopyFailsTheCollectiveOnEveryRank(t *testing.T) {
	comms := NewGroup(3)
	errs := make([][2]error, 3)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := c.(*local)
			errs[r][0] = l.collective(post{kind: "test", data: true}, func([]post) {
				if r == 1 {
					l.guard(func() { panic(errors.New("injected read failure")) })
					l.guard(func() { t.Error("a copy after a failed one ran") })
				}
				l.sync() // the other phases still meet
			})
			errs[r][1] = l.collective(post{kind: "test", data: true}, func([]post) {})
		}()
	}
	wg.Wait()
	for r, e := range errs {
		if e[0] == nil || !strings.Contains(e[0].Error(), "rank 1: injected read failure") {
			t.Errorf("rank %d: collective with rank 1's copy failing = %v, want rank 1's error", r, e[0])
		}
		if e[1] != nil {
			t.Errorf("rank %d: the next collective = %v, want nil", r, e[1])
		}
	}
}
