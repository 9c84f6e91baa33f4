package device_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
)

// peakOfPage is the peak of tl as the page computes it.
func peakOfPage(t *testing.T, tl *device.Timeline) device.ViewedPeak {
	t.Helper()
	pk, err := tl.ViewPeak()
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

// maxPageBytes is the bound on the page of 10M events (150 MB).
const maxPageBytes = 150_000_000

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// TestViewPeakMatchesAtPeak: the per-tag bytes the page's stream gives at the
// peak (its Go twin's decoding) equal the allocator's AtPeak byte for
// byte, and the page stays under 150 MB, for 1k, 1M and 10M events (10M
// not with -short, -race or noasm: see fullScale).
func TestViewPeakMatchesAtPeak(t *testing.T) {
	sizes := []int{1000, 1000000}
	if testing.Short() {
		sizes = sizes[:1]
	} else if fullScale {
		sizes = append(sizes, 10000000)
	}
	for _, n := range sizes {
		tl, st := simulate(t, n, uint64(n), int64(n)+12345)
		if len(tl.Events) < n {
			t.Fatalf("%d events recorded, want ≥ %d", len(tl.Events), n)
		}
		pk := peakOfPage(t, tl)
		if pk.ByTag != st.AtPeak {
			t.Errorf("%d events: page at peak %v, allocator AtPeak %v", n, pk.ByTag, st.AtPeak)
		}
		if want, _ := tl.Peak(); pk.Total != want || pk.Total != st.Requested.Peak {
			t.Errorf("%d events: page peak %d, timeline %d, allocator %d", n, pk.Total, want, st.Requested.Peak)
		}
		var w countingWriter
		if err := tl.WriteHTML(&w); err != nil {
			t.Fatal(err)
		}
		if w.n >= maxPageBytes {
			t.Errorf("%d events: the page is %d bytes, want < %d", len(tl.Events), w.n, maxPageBytes)
		}
		t.Logf("%d events: page %d bytes (%.2f per event)", len(tl.Events), w.n, float64(w.n)/float64(len(tl.Events)))
	}
}

// TestWriteHTMLSelfContained: the page has its data and script inline and
// refers to nothing outside itself.
func TestWriteHTMLSelfContained(t *testing.T) {
	tl, _ := simulate(t, 1000, 7, 0)
	var buf bytes.Buffer
	if err := tl.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"http://", "https://", "src=", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: it must not fetch anything", bad)
		}
	}
	for _, want := range []string{`id="runs"`, `id="data0"`, "function decode"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestWriteHTMLRefusesBadEvent: an unknown event kind is an error naming it.
func TestWriteHTMLRefusesBadEvent(t *testing.T) {
	tl, _ := simulate(t, 100, 1, 0)
	tl.Events[5].Kind = "bogus"
	err := tl.WriteHTML(&bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "event 5") {
		t.Fatalf("WriteHTML of a bad event: %v, want an error naming event 5", err)
	}
}

// TestReadTimelineCommits: a timeline with segment commits and decommits
// (what a capacity-limited device records) reads back.
func TestReadTimelineCommits(t *testing.T) {
	tl := &device.Timeline{Device: "meta:0", Events: []device.Event{
		{Seq: 0, Kind: "segment_alloc", Bytes: 4096, Addr: 1 << 32, Reserved: 4096},
		{Seq: 1, Kind: "segment_commit", Bytes: 8192, Addr: 1<<32 + 4096, Reserved: 12288},
		{Seq: 2, Kind: "alloc", Bytes: 100, Addr: 1 << 32, Allocated: 100, Reserved: 12288},
		{Seq: 3, Kind: "segment_decommit", Bytes: 8192, Addr: 1<<32 + 4096, Allocated: 100, Reserved: 4096},
	}}
	var buf bytes.Buffer
	if err := tl.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := device.ReadTimeline(&buf)
	if err != nil {
		t.Fatalf("ReadTimeline of commits and decommits: %v", err)
	}
	if len(back.Events) != 4 || back.Events[3].Reserved != 4096 {
		t.Errorf("read back %+v", back.Events)
	}
}
