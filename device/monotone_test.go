package device_test

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

// step is one operation of a replayed program: an allocation of n bytes,
// the release of live block i (modulo the number live), or EmptyCache.
type step struct {
	kind byte // 'a' alloc, 'f' free, 'e' EmptyCache
	n    int64
	i    int
}

func (s step) String() string {
	switch s.kind {
	case 'a':
		return fmt.Sprintf("alloc(%d)", s.n)
	case 'f':
		return fmt.Sprintf("free(#%d)", s.i)
	}
	return "emptycache"
}

// edgeSizes are the requests at the allocator's boundaries: the 512-byte
// granularity, the 1 MiB small-block limit, the 2 MiB small segment, the
// 10 MiB own-segment threshold and the 20 MiB large segment, each on both
// sides.
var edgeSizes = []int64{
	0, 1, 511, 512, 513,
	mib - 512, mib - 1, mib, mib + 1, mib + 512,
	2*mib - 512, 2 * mib, 2*mib + 1,
	10*mib - 513, 10*mib - 512, 10*mib - 1, 10 * mib, 10*mib + 1,
	19*mib + 512, 20*mib - 512, 20 * mib, 20*mib + 1,
}

// randProgram draws a program of allocations (edge sizes and random sizes
// of every class) and frees, with an occasional EmptyCache.
func randProgram(rng *rand.Rand, length int) []step {
	prog := make([]step, 0, length)
	live := 0
	for range length {
		switch r := rng.Intn(20); {
		case r < 10 || live == 0:
			n := edgeSizes[rng.Intn(len(edgeSizes))]
			if rng.Intn(2) == 0 {
				n = randRequest(rng)
			}
			prog = append(prog, step{kind: 'a', n: n})
			live++
		case r < 19:
			prog = append(prog, step{kind: 'f', i: rng.Intn(live)})
			live--
		default:
			prog = append(prog, step{kind: 'e'})
		}
	}
	return prog
}

// replay runs prog on a fresh meta device of the given capacity. It
// reports whether every allocation succeeded, and the peak of the live
// blocks' sizes in their segments (Stats.Allocated.Peak).
func replay(t *testing.T, prog []step, capacity int64) (fits bool, allocatedPeak int64) {
	t.Helper()
	d := meta.New(0, device.Options{Capacity: capacity})
	var live []*device.Block
	defer func() {
		for _, b := range live {
			b.Release()
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	for k, s := range prog {
		switch s.kind {
		case 'a':
			b, err := d.Alloc(s.n, device.Label{Tag: device.Activation, Op: fmt.Sprint("step", k)})
			var oom *device.OOMError
			if errors.As(err, &oom) {
				return false, d.Stats().Allocated.Peak
			}
			if err != nil {
				t.Fatalf("step %d %s: %v", k, s, err)
			}
			live = append(live, b)
		case 'f':
			i := s.i % len(live)
			live[i].Release()
			live = append(live[:i], live[i+1:]...)
		default:
			d.EmptyCache()
		}
	}
	return true, d.Stats().Allocated.Peak
}

// sweep lists the capacities a program is tried at: every 512 KiB from
// 512 KiB to 48 MiB past the program's unlimited peak, and the bytes
// around that peak.
func sweep(peak int64) []int64 {
	var cs []int64
	for c := int64(512 * kib); c <= peak+48*mib; c += 512 * kib {
		cs = append(cs, c)
	}
	for _, d := range []int64{-mib, -512, -1, 0, 1, 512, mib} {
		if peak+d > 0 {
			cs = append(cs, peak+d)
		}
	}
	return cs
}

// TestFitIsMonotoneInCapacity replays seeded random programs on meta
// devices over a sweep of capacities and checks that the capacities where
// a program fits are upward closed: fitting under C implies fitting under
// every larger C'. It also checks the allocator's closed-form rule (see the
// package doc, Capacity and OOM): a program fits exactly when the capacity
// is at least the peak of its blocks' sizes on an unlimited device.
func TestFitIsMonotoneInCapacity(t *testing.T) {
	const programs = 150
	rng := rand.New(rand.NewSource(13))
	checked := 0
	for p := range programs {
		prog := randProgram(rng, 20+rng.Intn(100))
		ok, peak := replay(t, prog, 0)
		if !ok {
			t.Fatalf("program %d does not fit an unlimited device", p)
		}
		cs := sweep(peak)
		fitAt := map[int64]bool{}
		for _, c := range cs {
			fitAt[c], _ = replay(t, prog, c)
			checked++
		}
		for _, lo := range cs {
			for _, hi := range cs {
				if hi > lo && fitAt[lo] && !fitAt[hi] {
					t.Fatalf("program %d fits in %d B but not in %d B (unlimited peak %d B):\n%s",
						p, lo, hi, peak, programText(prog))
				}
			}
		}
		for _, c := range cs {
			if fitAt[c] != (c >= peak) {
				t.Fatalf("program %d: fits in %d B = %v, but its unlimited allocated peak is %d B:\n%s",
					p, c, fitAt[c], peak, programText(prog))
			}
		}
	}
	t.Logf("%d programs, %d (program, capacity) replays: fitting is upward closed and starts exactly at each program's allocated peak", programs, checked)
}

func programText(prog []step) string {
	parts := make([]string, len(prog))
	for i, s := range prog {
		parts[i] = s.String()
	}
	return strings.Join(parts, " ")
}
