package prune

import "fmt"

// FineTune calls step(i) for i = 0 … steps−1 and returns the losses it
// reported: the loop that recovers accuracy after pruning, with the step
// (forward, backward and an optimizer made after pruning) supplied by the
// caller. It stops at the first error and returns the losses so far with
// that error, naming the step. steps < 0 is an error; 0 runs nothing.
func FineTune(steps int, step func(i int) (loss float64, err error)) ([]float64, error) {
	if steps < 0 {
		return nil, fmt.Errorf("prune.FineTune: %d steps: want ≥ 0", steps)
	}
	if step == nil {
		return nil, fmt.Errorf("prune.FineTune: nil step function")
	}
	losses := make([]float64, 0, steps)
	for i := range steps {
		l, err := step(i)
		if err != nil {
			return losses, fmt.Errorf("prune.FineTune: step %d: %w", i, err)
		}
		losses = append(losses, l)
	}
	return losses, nil
}
