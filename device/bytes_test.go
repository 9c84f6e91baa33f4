package device_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/meta"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"24GiB", 24 << 30},
		{"1.5 GiB", 3 << 29},
		{"512MiB", 512 << 20},
		{"80GB", 80e9},
		{"4096", 4096},
		{"64k", 64 << 10},
		{"64K", 64 << 10},
		{"64KB", 64000},
		{"2 m", 2 << 20},
		{"1g", 1 << 30},
		{"1 TiB", 1 << 40},
		{"2TB", 2e12},
		{"100 B", 100},
		{"100b", 100},
		{"  7 mib  ", 7 << 20},
		{"0", 0},
		{"0.5KiB", 512},
		{"1.0009765625 KiB", 1025},
		{".5k", 512},
	}
	for _, tt := range tests {
		got, err := device.ParseBytes(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, nil", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{
		"", "GiB", "abc", "-1", "-1GiB", "1.5.5GiB", "12 parsecs", "1 GiBs", "1 KiB B",
		"NaN", "Inf", "1e30 TiB", "9000000 TiB", "1x", "0x10",
	} {
		if got, err := device.ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{512, "512 B"},
		{1023, "1023 B"},
		{1024, "1.00 KiB"},
		{1536, "1.50 KiB"},
		{64 << 20, "64.00 MiB"},
		{9 << 28, "2.25 GiB"},
		{3 << 40, "3.00 TiB"},
		{-1536, "-1.50 KiB"},
	}
	for _, tt := range tests {
		if got := device.FormatBytes(tt.n); got != tt.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	// FormatBytes's output reads back within its rounding.
	for _, n := range []int64{0, 512, 4096, 3 << 29, 24 << 30} {
		got, err := device.ParseBytes(device.FormatBytes(n))
		if err != nil || got != n {
			t.Errorf("ParseBytes(FormatBytes(%d)) = %d, %v", n, got, err)
		}
	}
}

func TestTags(t *testing.T) {
	ts := device.Tags()
	if len(ts) != int(device.NumTags) || ts[0] != device.Parameter || ts[len(ts)-1] != device.Other {
		t.Fatalf("Tags() = %v", ts)
	}
	names := []string{"parameter", "gradient", "optimizer", "activation", "workspace", "communication", "other"}
	for i, tg := range ts {
		if tg.String() != names[i] {
			t.Errorf("Tag(%d).String() = %q, want %q", i, tg, names[i])
		}
		for _, in := range []string{names[i], strings.ToUpper(names[i])} {
			if got, err := device.ParseTag(in); err != nil || got != tg {
				t.Errorf("ParseTag(%q) = %v, %v; want %v", in, got, err, tg)
			}
		}
		b, err := tg.MarshalText()
		if err != nil || string(b) != names[i] {
			t.Errorf("MarshalText(%v) = %q, %v", tg, b, err)
		}
		var back device.Tag
		if err := back.UnmarshalText(b); err != nil || back != tg {
			t.Errorf("UnmarshalText(%q) = %v, %v", b, back, err)
		}
	}
	if _, err := device.ParseTag("weights"); err == nil {
		t.Error(`ParseTag("weights") succeeded`)
	}
	if s := device.NumTags.String(); s != "tag(7)" {
		t.Errorf("NumTags.String() = %q", s)
	}
	if _, err := device.NumTags.MarshalText(); err == nil {
		t.Error("MarshalText of an invalid tag succeeded")
	}
}

func TestStatsJSON(t *testing.T) {
	d := meta.New(3, device.Options{Capacity: 64 * mib})
	a := mustAlloc(t, d, 3000, device.Activation, "a")
	g := mustAlloc(t, d, 2*mib, device.Gradient, "g")
	w := mustAlloc(t, d, 100, device.Workspace, "w")
	w.Release()
	if _, err := d.Alloc(128*mib, device.Label{}); err == nil {
		t.Fatal("Alloc beyond capacity succeeded")
	}
	st := d.Stats()
	js, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`"device":"meta:3"`, `"capacity":67108864`, `"ooms":1`, `"segments":2`,
		`"activation":{"current":3000,"peak":3000,"allocated":3000,"freed":0,"allocs":1,"frees":0}`,
		`"workspace":{"current":0,"peak":100,"allocated":100,"freed":100,"allocs":1,"frees":1}`,
		`"at_peak":{`, `"gradient":2097152`,
	} {
		if !strings.Contains(string(js), s) {
			t.Errorf("Stats JSON lacks %s:\n%s", s, js)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	if byTag, ok := m["by_tag"].(map[string]any); !ok || len(byTag) != int(device.NumTags) {
		t.Errorf("by_tag = %v, want one entry per tag", m["by_tag"])
	}
	var back device.Stats
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, st)
	}
	if err := json.Unmarshal([]byte(`{"by_tag":{"weights":{}}}`), &back); err == nil {
		t.Error("Stats JSON with an unknown tag accepted")
	}
	if err := json.Unmarshal([]byte(`{"at_peak":{"weights":1}}`), &back); err == nil {
		t.Error("Stats JSON with an unknown at_peak tag accepted")
	}
	a.Release()
	g.Release()
}
