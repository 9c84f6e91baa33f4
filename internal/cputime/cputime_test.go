package cputime_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/cputime"
)

// spin burns about d of processor time on the calling thread.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// TestClocksAdvanceWithWork: 50 ms of spinning moves both clocks forward
// by at least 25 ms (the thread may be descheduled, never credited more
// than it ran) and a sleep does not move the thread clock by 25 ms.
func TestClocksAdvanceWithWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p0, t0 := cputime.Process(), cputime.Thread()
	spin(50 * time.Millisecond)
	p1, t1 := cputime.Process(), cputime.Thread()
	if p0 != 0 && p1-p0 < 25*time.Millisecond {
		t.Errorf("process time rose %v over 50 ms of spinning, want ≥ 25 ms", p1-p0)
	}
	if t0 != 0 && t1-t0 < 25*time.Millisecond {
		t.Errorf("thread time rose %v over 50 ms of spinning, want ≥ 25 ms", t1-t0)
	}
	time.Sleep(50 * time.Millisecond)
	if t2 := cputime.Thread(); t1 != 0 && t2-t1 > 25*time.Millisecond {
		t.Errorf("thread time rose %v over a 50 ms sleep, want < 25 ms", t2-t1)
	}
}
