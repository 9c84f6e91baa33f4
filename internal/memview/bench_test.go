package memview_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/headroom-ml/headroom/internal/memview"
	"github.com/headroom-ml/headroom/internal/memview/memviewtest"
)

// steps is a synthetic run of training steps held compactly: per step,
// forward allocates layers activations (and frees a workspace block each),
// backward frees them in reverse with a gradient workspace each.
type steps struct {
	kind, tag []uint8
	bytes     []int64
	addr      []uint64
	label     []uint8
	labels    [][3]string
}

func (s *steps) Len() int { return len(s.kind) }

func (s *steps) At(i int) memview.Event {
	l := s.labels[s.label[i]]
	return memview.Event{T: int64(i) * 250, Kind: s.kind[i], Tag: s.tag[i], Bytes: s.bytes[i], Addr: s.addr[i],
		Scope: l[0], Op: l[1], Phase: l[2]}
}

func (s *steps) add(kind, tag uint8, n int64, addr uint64, label int) {
	s.kind, s.tag, s.bytes, s.addr = append(s.kind, kind), append(s.tag, tag), append(s.bytes, n), append(s.addr, addr)
	s.label = append(s.label, uint8(label))
}

// synth returns a run of about n events.
func synth(n int) *steps {
	const layers = 50
	s := &steps{}
	for l := range layers {
		for _, ph := range []string{"forward", "backward"} {
			s.labels = append(s.labels, [3]string{fmt.Sprintf("layer%d", l), "matmul", ph})
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	next := uint64(1 << 32)
	for s.Len() < n {
		var act []uint64
		for l := range layers {
			a, w := next, next+1<<24
			next += 2 << 24
			s.add(memview.Alloc, 4, int64(1+rng.IntN(1<<20)), w, 2*l)
			s.add(memview.Alloc, 3, int64(1+rng.IntN(1<<22)), a, 2*l)
			s.add(memview.Free, 4, s.bytes[s.Len()-2], w, 2*l)
			act = append(act, a)
		}
		for l := layers - 1; l >= 0; l-- {
			g := next
			next += 1 << 24
			s.add(memview.Alloc, 4, int64(1+rng.IntN(1<<21)), g, 2*l+1)
			s.add(memview.Free, 4, s.bytes[s.Len()-1], g, 2*l+1)
			s.add(memview.Free, 3, 0, act[l], 2*l+1)
		}
	}
	// Frees carry their block's bytes, as the device records them.
	live := map[uint64]int64{}
	for i := range s.kind {
		if s.kind[i] == memview.Alloc {
			live[s.addr[i]] = s.bytes[i]
		} else {
			s.bytes[i] = live[s.addr[i]]
			delete(live, s.addr[i])
		}
	}
	return s
}

// BenchmarkViewer writes the page of 1M and 10M synthetic events, opens it
// in headless Chromium and reports the file's size, the time to open
// (navigation to ready, by the page's performance clock) and the frames per
// second of 60 pan/zoom frames (requestAnimationFrame).
func BenchmarkViewer(b *testing.B) {
	if memviewtest.Chromium() == "" {
		b.Skip("no chromium on PATH: install it (apt-get install -y chromium)")
	}
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			src := synth(n)
			path := filepath.Join(b.TempDir(), "view.html")
			for b.Loop() {
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				began := time.Now()
				if err := memview.Write(f, memview.Run{Name: "synthetic", Device: "meta:0", Events: src}); err != nil {
					b.Fatal(err)
				}
				f.Close()
				b.ReportMetric(time.Since(began).Seconds(), "write_s")
				fi, _ := os.Stat(path)
				b.ReportMetric(float64(fi.Size())/1e6, "html_MB")
				b.ReportMetric(float64(fi.Size())/float64(src.Len()), "B/event")
				ctx, stop := memviewtest.Open(b, path, 120*time.Second)
				b.ReportMetric(memviewtest.Eval[float64](b, ctx, "window.memview.readyAt")/1000, "open_s")
				b.Logf("%d events: script phases (ms) %v", n, memviewtest.Eval[map[string]float64](b, ctx, "window.memview.ms"))
				b.ReportMetric(memviewtest.Eval[float64](b, ctx, "window.memview.openMs")/1000, "script_s")
				b.ReportMetric(memviewtest.Eval[float64](b, ctx, "window.memview.animate(60)"), "fps")
				b.ReportMetric(memviewtest.Eval[float64](b, ctx, "window.memview.frameMs(20)"), "frame_ms")
				stop()
			}
		})
	}
}
