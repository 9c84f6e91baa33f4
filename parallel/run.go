package parallel

import (
	"errors"
	"fmt"
	"sync"
)

// RankError is the error one rank returned from Run.
type RankError struct {
	Rank int
	Err  error
}

func (e *RankError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }

// Unwrap returns the rank's error.
func (e *RankError) Unwrap() error { return e.Err }

// Run calls f with each communicator of comms on its own goroutine and
// waits for all of them. When one returns an error, Run aborts the group
// with it, so that the others fail at their next collective instead of
// waiting forever for the failed rank; when one returns nil, the
// in-process group's collectives that still need it fail likewise. It
// returns nil when every rank succeeded, and otherwise the ranks' errors
// as *RankError, joined in the order they happened: the cause first, then
// the ranks it stopped.
func Run(comms []Communicator, f func(c Communicator) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(c); err != nil {
				mu.Lock()
				errs = append(errs, &RankError{Rank: c.Rank(), Err: err})
				mu.Unlock()
				c.Abort(err)
			} else if l, ok := c.(interface{ leave() }); ok {
				l.leave()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
