package data

import (
	"fmt"
	"math/rand/v2"
)

// LoaderState is where a Loader stands: enough to resume it so that it
// returns exactly the batches it would have returned. It marshals to JSON
// (the generator states as base64).
type LoaderState struct {
	Epoch   int    `json:"epoch"`   // epochs completed
	Pos     int    `json:"pos"`     // samples of the current epoch already returned
	N       int    `json:"n"`       // samples in the set, checked on restore
	Shuffle bool   `json:"shuffle"` // whether the loader shuffles, checked on restore
	Order   []byte `json:"order"`   // the shuffling PCG when the current epoch began (PCG.MarshalBinary)
	Augment []byte `json:"augment"` // the augmentation PCG now
}

// State returns the loader's position and generator states.
func (l *Loader) State() LoaderState {
	order, err := l.orderStart.MarshalBinary()
	if err != nil {
		panic(fmt.Sprintf("data.Loader.State: %v", err)) // PCG.MarshalBinary cannot fail
	}
	aug, err := l.aug.MarshalBinary()
	if err != nil {
		panic(fmt.Sprintf("data.Loader.State: %v", err))
	}
	return LoaderState{Epoch: l.epoch, Pos: l.pos, N: l.set.N, Shuffle: l.cfg.Shuffle, Order: order, Augment: aug}
}

// SetState moves the loader to a state returned by State of a loader over
// the same set with the same config (Seed aside: the state carries the
// generators). The current epoch's order is drawn again from the saved
// shuffling state, so the following batches are bit-identical to those
// the saved loader went on to return. On error the loader is unchanged.
func (l *Loader) SetState(s LoaderState) error {
	if s.N != l.set.N {
		return fmt.Errorf("data.Loader.SetState: the state is of a set of %d samples, this loader's has %d", s.N, l.set.N)
	}
	if s.Shuffle != l.cfg.Shuffle {
		return fmt.Errorf("data.Loader.SetState: the state is of a loader with Shuffle %v, this one has Shuffle %v", s.Shuffle, l.cfg.Shuffle)
	}
	if s.Epoch < 0 || s.Pos < 0 || s.Pos > s.N {
		return fmt.Errorf("data.Loader.SetState: epoch %d, position %d: want epoch ≥ 0 and 0 ≤ position ≤ %d", s.Epoch, s.Pos, s.N)
	}
	var order, aug rand.PCG
	if err := order.UnmarshalBinary(s.Order); err != nil {
		return fmt.Errorf("data.Loader.SetState: shuffling generator: %w", err)
	}
	if err := aug.UnmarshalBinary(s.Augment); err != nil {
		return fmt.Errorf("data.Loader.SetState: augmentation generator: %w", err)
	}
	l.epoch, l.pos = s.Epoch, s.Pos
	l.order, l.aug = order, aug
	l.startEpoch()
	return nil
}
