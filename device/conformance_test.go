package device_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/meta"
)

// trace runs a seeded random program of allocations, frees, retags and
// cache flushes on d and records everything observable about its memory:
// each block's address and size, each OOM's numbers, periodic Stats.
func trace(t *testing.T, d *device.Device, seed int64) []string {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	var out []string
	var live []*device.Block
	d.StartTimeline()
	for step := range 600 {
		switch r := rng.Intn(20); {
		case r < 11 || len(live) == 0:
			n := randRequest(rng)
			l := device.Label{Tag: device.Tag(rng.Intn(int(device.NumTags))), Op: fmt.Sprint("op", rng.Intn(4))}
			b, err := d.Alloc(n, l)
			var oom *device.OOMError
			switch {
			case errors.As(err, &oom):
				oom.Device = ""
				out = append(out, fmt.Sprintf("%d oom %+v", step, *oom))
			case err != nil:
				t.Fatalf("%s: step %d: Alloc(%d): %v", d, step, n, err)
			default:
				if h := b.Bytes(); h != nil {
					h[0], h[len(h)-1] = 1, 2 // touch it (cpu)
				}
				out = append(out, fmt.Sprintf("%d alloc %d at %#x size %d id %d", step, n, b.Addr(), b.BlockSize(), b.ID()))
				live = append(live, b)
			}
		case r < 18:
			i := rng.Intn(len(live))
			live[i].Release()
			live = append(live[:i], live[i+1:]...)
		case r < 19:
			live[rng.Intn(len(live))].Retag(device.Tag(rng.Intn(int(device.NumTags))))
		default:
			d.EmptyCache()
		}
		if step%50 == 0 {
			st := d.Stats()
			st.Device = ""
			out = append(out, fmt.Sprintf("%d stats %+v", step, st))
		}
	}
	for _, b := range live {
		b.Release()
	}
	st := d.Stats()
	st.Device = ""
	out = append(out, fmt.Sprintf("end stats %+v", st))
	tl := d.StopTimeline()
	for _, e := range tl.Events {
		e.T = 0
		out = append(out, fmt.Sprintf("event %+v", e))
	}
	d.EmptyCache()
	return out
}

// randRequest draws sizes from every size class: tiny, small, large and
// those that get a segment of their own.
func randRequest(rng *rand.Rand) int64 {
	switch rng.Intn(8) {
	case 0:
		return int64(rng.Intn(1024))
	case 1, 2, 3:
		return int64(rng.Intn(512 << 10))
	case 4:
		return int64(rng.Intn(1<<20) + 1<<19)
	case 5, 6:
		return int64(rng.Intn(6<<20) + 1<<20)
	}
	return int64(rng.Intn(6<<20) + 10<<20)
}

// TestMetaMatchesCPU: meta accounts exactly like cpu — same addresses, same
// OOM points and numbers, same Stats, same timeline.
func TestMetaMatchesCPU(t *testing.T) {
	for _, capacity := range []int64{0, 40 * mib} {
		for seed := int64(1); seed <= 3; seed++ {
			c := trace(t, cpu.New(0, device.Options{Capacity: capacity}), seed)
			m := trace(t, meta.New(0, device.Options{Capacity: capacity}), seed)
			for i := range max(len(c), len(m)) {
				if i >= len(c) || i >= len(m) || c[i] != m[i] {
					var ci, mi string
					if i < len(c) {
						ci = c[i]
					}
					if i < len(m) {
						mi = m[i]
					}
					t.Fatalf("capacity %d seed %d: traces differ at %d:\ncpu:  %s\nmeta: %s", capacity, seed, i, ci, mi)
				}
			}
			if capacity > 0 && (!containsOOM(c) || !strings.Contains(strings.Join(c, "\n"), "Kind:segment_decommit")) {
				t.Errorf("capacity %d seed %d: no OOM or no decommit; the test does not reach the capacity", capacity, seed)
			}
		}
	}
}

func containsOOM(trace []string) bool {
	for _, s := range trace {
		var step int
		var word string
		if n, _ := fmt.Sscanf(s, "%d %s", &step, &word); n == 2 && word == "oom" {
			return true
		}
	}
	return false
}

// TestConcurrent hammers one device from several goroutines (run it with
// -race): blocks written by one goroutine are never disturbed by others, a
// block shared by all is freed by its last Release, and the books balance.
func TestConcurrent(t *testing.T) {
	for _, d := range []*device.Device{
		cpu.New(1, device.Options{Capacity: 64 * mib}),
		meta.New(1, device.Options{Capacity: 64 * mib}),
	} {
		t.Run(d.Kind(), func(t *testing.T) {
			d.StartTimeline()
			shared := mustAlloc(t, d, 4096, device.Parameter, "shared")
			const workers, steps = 8, 250
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			var ooms sync.Map
			for w := range workers {
				shared.Retain()
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer shared.Release()
					rng := rand.New(rand.NewSource(int64(w)))
					fillW := bytes.Repeat([]byte{byte(w + 1)}, 5<<20)
					var mine []*device.Block
					for s := range steps {
						if len(mine) < 4 || rng.Intn(2) == 0 {
							n := int64(rng.Intn(256<<10) + 1)
							if rng.Intn(16) == 0 {
								n = int64(rng.Intn(4<<20) + 1<<20)
							}
							b, err := d.Alloc(n, device.Label{Tag: device.Tag(w % int(device.NumTags)), Op: fmt.Sprint("w", w)})
							if err != nil {
								var oom *device.OOMError
								if !errors.As(err, &oom) {
									errs <- err
									return
								}
								ooms.Store(fmt.Sprint(w, s), true)
								continue
							}
							if h := b.Bytes(); h != nil {
								copy(h, fillW)
							}
							mine = append(mine, b)
						} else {
							i := rng.Intn(len(mine))
							b := mine[i]
							if h := b.Bytes(); h != nil && !bytes.Equal(h, fillW[:len(h)]) {
								errs <- fmt.Errorf("worker %d: block %d (%d bytes at %#x) overwritten", w, b.ID(), len(h), b.Addr())
								return
							}
							b.Release()
							mine = append(mine[:i], mine[i+1:]...)
						}
						if s%50 == 0 {
							_ = d.Stats()
							_ = d.Live()
							_ = d.Summary()
						}
					}
					for _, b := range mine {
						b.Release()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if shared.Freed() || shared.Refs() != 1 {
				t.Errorf("shared block: Freed %v Refs %d, want live with 1 reference", shared.Freed(), shared.Refs())
			}
			shared.Release()
			tl := d.StopTimeline()
			st := d.Stats()
			if st.Requested.Current != 0 || st.Allocated.Current != 0 || d.LiveBlocks() != 0 ||
				st.Requested.Allocs != st.Requested.Frees || st.Requested.Allocated != st.Requested.Freed {
				t.Errorf("books do not balance: %+v", st)
			}
			var tagAllocs int64
			for _, tg := range device.Tags() {
				c := st.Tag(tg)
				tagAllocs += c.Allocs
				if c.Current != 0 || c.Allocated != c.Freed {
					t.Errorf("tag %s: %+v", tg, c)
				}
			}
			if tagAllocs != st.Requested.Allocs {
				t.Errorf("per-tag allocations %d, total %d", tagAllocs, st.Requested.Allocs)
			}
			nOOM := 0
			ooms.Range(func(any, any) bool { nOOM++; return true })
			if st.OOMs != int64(nOOM) {
				t.Errorf("OOMs = %d, workers saw %d", st.OOMs, nOOM)
			}
			kinds := map[string]int64{}
			for _, e := range tl.Events {
				kinds[e.Kind]++
			}
			// Reserved changes with each segment reservation and release and
			// each commit and decommit within a segment.
			if kinds["alloc"] != st.Requested.Allocs || kinds["free"] != st.Requested.Frees ||
				kinds["segment_alloc"]+kinds["segment_commit"] != st.Reserved.Allocs ||
				kinds["segment_free"]+kinds["segment_decommit"] != st.Reserved.Frees || kinds["oom"] != st.OOMs {
				t.Errorf("timeline kinds %v disagree with %+v", kinds, st)
			}
			d.EmptyCache()
			if st := d.Stats(); st.Reserved.Current != 0 || st.Segments != 0 {
				t.Errorf("after EmptyCache: reserved %d in %d segments", st.Reserved.Current, st.Segments)
			}
		})
	}
}

// TestDevicesIndependent: two devices keep separate books.
func TestDevicesIndependent(t *testing.T) {
	a := cpu.New(0, device.Options{})
	b := cpu.New(1, device.Options{})
	x := mustAlloc(t, a, 1000, device.Parameter, "x")
	if b.Stats().Requested.Allocs != 0 || a.Name() != "cpu:0" || b.String() != "cpu:1" {
		t.Errorf("devices share state: %+v", b.Stats())
	}
	if !reflect.DeepEqual(b.Live(), []device.LiveGroup(nil)) {
		t.Errorf("b.Live() = %+v", b.Live())
	}
	x.Release()
}
