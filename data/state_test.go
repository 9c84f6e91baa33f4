package data

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

type batch struct {
	x  []float32
	y  []int64
	ok bool
}

func take(l *Loader, n int) []batch {
	var out []batch
	for range n {
		x, y, ok := l.Next()
		out = append(out, batch{slices.Clone(x), slices.Clone(y), ok})
	}
	return out
}

func sameBatches(a, b []batch) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ok != b[i].ok || !slices.Equal(a[i].x, b[i].x) || !slices.Equal(a[i].y, b[i].y) {
			return false
		}
	}
	return true
}

// TestLoaderResume takes 5 batches, saves the state (through JSON), takes
// more — across the end of the epoch, so the next epoch's reshuffle is
// covered — and checks that a fresh loader given the state returns the
// same batches bit for bit.
func TestLoaderResume(t *testing.T) {
	set := SyntheticImages(50, 3, 8, 8, 10, 7) // 7 batches of 8 per epoch
	cfg := LoaderConfig{Batch: 8, Shuffle: true, Seed: 11, Crop: 2, Flip: true,
		Mean: []float32{0.5, 0.4, 0.3}, Std: []float32{0.2, 0.25, 0.3}}
	l, err := NewLoader(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	take(l, 5)
	saved, err := json.Marshal(l.State())
	if err != nil {
		t.Fatal(err)
	}
	want := take(l, 3)     // batches 6 and 7 of epoch 0, then the end of the epoch
	wantMore := take(l, 6) // most of epoch 1
	if !want[0].ok || !want[1].ok || want[2].ok || len(want[1].y) != 2 {
		t.Fatalf("batches 6–8 ok = %v %v %v, sizes %d %d; want a batch of 8, one of 2, the end", want[0].ok, want[1].ok, want[2].ok, len(want[0].y), len(want[1].y))
	}
	var s LoaderState
	if err := json.Unmarshal(saved, &s); err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.Seed = 99 // the state carries the generators
	r, err := NewLoader(set, other)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetState(s); err != nil {
		t.Fatal(err)
	}
	if got := take(r, 3); !sameBatches(got, want) {
		t.Fatalf("resumed loader's 3 batches differ from the original's")
	}
	if got := take(r, 6); !sameBatches(got, wantMore) {
		t.Fatalf("resumed loader's next epoch differs from the original's")
	}
	if r.Epoch() != 1 || l.Epoch() != 1 {
		t.Errorf("epochs after resuming: %d and %d, want 1", r.Epoch(), l.Epoch())
	}
	// The state at an epoch's start also resumes.
	fresh, _ := NewLoader(set, cfg)
	s0 := fresh.State()
	first := take(fresh, 2)
	if err := fresh.SetState(s0); err != nil {
		t.Fatal(err)
	}
	if again := take(fresh, 2); !sameBatches(first, again) {
		t.Errorf("restoring the initial state does not replay the first batches")
	}
}

func TestLoaderSetStateErrors(t *testing.T) {
	set := SyntheticImages(20, 1, 4, 4, 3, 1)
	cfg := LoaderConfig{Batch: 4, Shuffle: true, Flip: true, Seed: 3}
	l, _ := NewLoader(set, cfg)
	twin, _ := NewLoader(set, cfg)
	take(l, 2)
	take(twin, 2)
	good := l.State()
	corrupt := func(f func(*LoaderState)) LoaderState {
		s := good
		f(&s)
		return s
	}
	for _, c := range []struct {
		s    LoaderState
		want string
	}{
		{corrupt(func(s *LoaderState) { s.N = 21 }), "set of 21 samples, this loader's has 20"},
		{corrupt(func(s *LoaderState) { s.Shuffle = false }), "Shuffle false"},
		{corrupt(func(s *LoaderState) { s.Pos = 21 }), "position 21"},
		{corrupt(func(s *LoaderState) { s.Epoch = -1 }), "epoch -1"},
		{corrupt(func(s *LoaderState) { s.Order = []byte("junk") }), "shuffling generator"},
		{corrupt(func(s *LoaderState) { s.Augment = nil }), "augmentation generator"},
	} {
		err := l.SetState(c.s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetState(%+v) error = %v, want one saying %q", c.s, err, c.want)
		}
	}
	// Failed restores changed nothing: l still runs in step with its twin.
	if !sameBatches(take(l, 6), take(twin, 6)) {
		t.Errorf("a failed SetState changed the loader")
	}
}
