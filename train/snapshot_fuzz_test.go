package train_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/amp"
	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/safetensors"
	"github.com/headroom-ml/headroom/train"
)

// snapRun is a Linear model with an Adam optimizer that has taken one
// step on the example batch, so that it has state tensors and step counts.
type snapRun struct {
	m *nn.Linear
	o *optim.Adam
}

func newSnapRun(tb testing.TB, dev *device.Device, seed uint64) snapRun {
	tb.Helper()
	m := nn.NewLinear(nn.NewBuilder(dev, dtype.F64, seed), "fc", exIn, exClasses, true)
	o, err := optim.NewAdam(m.Params(), optim.AdamConfig{LR: 0.01})
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := (&train.Stepper{Opt: o}).Step(exampleMicro(dev, m, 1)); err != nil {
		tb.Fatal(err)
	}
	return snapRun{m, o}
}

func (r snapRun) release() {
	r.o.Release()
	nn.Release(r.m)
}

// state is everything LoadSnapshot may write: the model's and the
// optimizer's tensors (raw bytes) and the optimizer's scalars; with
// versions, also each tensor's block version, which any write bumps (even
// of the same bytes).
func (r snapRun) state(versions bool) map[string]string {
	out := map[string]string{}
	add := func(name string, t *autograd.Tensor) {
		out[name] = string(t.Block().Bytes())
		if versions {
			out["version."+name] = fmt.Sprint(t.Block().Version())
		}
	}
	for _, p := range r.m.Params() {
		add("model."+p.Name, p.T)
	}
	st := r.o.State()
	for n, t := range st.Tensors {
		add("optim."+n, t)
	}
	for n, v := range st.Scalars {
		out["scalar."+n] = fmt.Sprint(v + 0) // -0 and 0 load as the same hyperparameter
	}
	return out
}

// saveSnap writes r's snapshot at step 1 to path and returns the file.
func saveSnap(tb testing.TB, r snapRun, path string) []byte {
	tb.Helper()
	snap := train.Snapshot{Step: 1, Loss: 1.6498, Scaler: &amp.ScalerState{Scale: 65536, GrowthTracker: 1},
		Generators: map[string]autograd.GeneratorState{"dropout": {Seed: 7, Offset: 96}}, Extra: []byte(`{"epoch":0}`)}
	if err := train.SaveSnapshot(path, r.m, r.o, snap); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// withoutChecksums is file b as a writer without checksums (Python, an
// older headroom) would have written it.
func withoutChecksums(tb testing.TB, b []byte) []byte {
	tb.Helper()
	f, err := safetensors.Decode(b)
	if err != nil {
		tb.Fatal(err)
	}
	f.Checksums = nil
	var out bytes.Buffer
	if err := safetensors.Encode(&out, f); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

// splice replaces bytes [at, end) of base (both taken modulo the valid
// range) with patch: any edit, from one changed byte to a whole new file.
func splice(base []byte, at, end uint16, patch []byte) []byte {
	a := int(at) % (len(base) + 1)
	e := a + int(end)%(len(base)+1-a)
	return slices.Concat(base[:a], patch, base[e:])
}

// FuzzLoadSnapshot loads edited snapshot files into a model and its
// optimizer: LoadSnapshot never panics; when it fails, the model and the
// optimizer are exactly as they were; when it succeeds, they hold exactly
// the file's tensors and scalars. The input is an edit of a real snapshot,
// with its checksums or (checked) without them, so that the fuzzer reaches
// past the checksums, and small inputs keep its minimisation quick.
func FuzzLoadSnapshot(f *testing.F) {
	dev := cpu.New(0, device.Options{})
	r := newSnapRun(f, dev, 1)
	dir := f.TempDir()
	good := saveSnap(f, r, filepath.Join(dir, "good.safetensors"))
	plain := withoutChecksums(f, good)
	dst := newSnapRun(f, dev, 2)
	f.Add(false, uint16(0), uint16(0), []byte{})               // the file as saved
	f.Add(true, uint16(0), uint16(0), []byte{})                // unverified
	f.Add(false, uint16(len(good)-1), uint16(1), []byte{})     // one byte short
	f.Add(true, uint16(len(plain)-4), uint16(1), []byte{0xff}) // a changed value
	f.Add(true, uint16(0), uint16(len(plain)), []byte("{}"))   // not a safetensors file
	f.Add(false, uint16(0), uint16(len(good)), []byte{})       // empty
	for _, edit := range [][2]string{{`\"step\":1`, `\"step\":-1`}, {`\"lr\":0.01`, `\"lr\":-1e9`},
		{`\"optim\":{`, `\"optim\":[`}, {`"F64"`, `"I64"`}, {`[3,4]`, `[4,3]`}} {
		i := bytes.Index(plain, []byte(edit[0]))
		if i < 0 {
			f.Fatalf("%s not in the file", edit[0])
		}
		f.Add(true, uint16(i), uint16(len(edit[0])), []byte(edit[1]))
	}
	path := filepath.Join(dir, "fuzzed.safetensors")
	before := dst.state(true)
	f.Fuzz(func(t *testing.T, unverified bool, at, end uint16, patch []byte) {
		base := good
		if unverified {
			base = plain
		}
		b := splice(base, at, end, patch)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		snap, err := train.LoadSnapshot(path, dst.m, dst.o)
		if err != nil {
			if d := diffState(before, dst.state(true)); d != "" {
				t.Fatalf("a failed LoadSnapshot changed %s: %v", d, err)
			}
			return
		}
		if d := diffState(fileState(t, b, snap), dst.state(false)); d != "" {
			t.Fatalf("LoadSnapshot succeeded but %s is not what the file holds", d)
		}
		before = dst.state(true)
	})
}

// fileState is what a file that loaded should have put into the run: its
// tensors, and the snapshot's optimizer scalars.
func fileState(t *testing.T, b []byte, snap train.Snapshot) map[string]string {
	f, err := safetensors.Decode(b)
	if err != nil {
		t.Fatalf("LoadSnapshot accepted a file Decode refuses: %v", err)
	}
	out := map[string]string{}
	for n, ft := range f.Tensors {
		if strings.HasPrefix(n, "model.") || strings.HasPrefix(n, "optim.") {
			out[n] = string(ft.Data)
		}
	}
	for n, v := range snap.Optim {
		out["scalar."+n] = fmt.Sprint(v + 0) // -0 and 0 load as the same hyperparameter
	}
	return out
}

// diffState names the first entry in which two states differ, or "".
func diffState(a, b map[string]string) string {
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if a[k] != b[k] {
			return k
		}
	}
	return ""
}

// A snapshot with any one byte changed (bit i%8 of byte i, for every i)
// fails to load, naming the file, and the tensor when the byte is in its
// data; the model and the optimizer are left exactly as they were.
func TestLoadSnapshotFlippedBytes(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	defer func() {
		if err := dev.Close(); err != nil {
			t.Error(err)
		}
	}()
	src, dst := newSnapRun(t, dev, 1), newSnapRun(t, dev, 2)
	defer src.release()
	defer dst.release()
	dir := t.TempDir()
	b := saveSnap(t, src, filepath.Join(dir, "good.safetensors"))
	f, err := safetensors.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	owner := make([]string, len(b)) // the tensor each data byte belongs to
	at := len(b)
	for _, n := range slices.Backward(f.Names) {
		for range f.Tensors[n].Data {
			at--
			owner[at] = n
		}
	}
	before := dst.state(true)
	path := filepath.Join(dir, "flipped.safetensors")
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 1 << (i % 8)
		if err := os.WriteFile(path, c, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := train.LoadSnapshot(path, dst.m, dst.o)
		var ce *safetensors.ChecksumError
		switch {
		case err == nil || !strings.Contains(err.Error(), path):
			t.Fatalf("byte %d (%q) bit %d: LoadSnapshot error %v, want one naming %s", i, b[i], i%8, err, path)
		case owner[i] != "" && (!errors.As(err, &ce) || ce.Tensor != owner[i] || !strings.Contains(err.Error(), fmt.Sprintf("tensor %q", owner[i]))):
			t.Fatalf("byte %d, in %q: LoadSnapshot error %v, want a checksum error naming the tensor", i, owner[i], err)
		}
		if d := diffState(before, dst.state(true)); d != "" {
			t.Fatalf("byte %d: a failed LoadSnapshot changed %s", i, d)
		}
	}
	t.Logf("%d-byte snapshot (%d tensors): each byte flipped in turn, every load refused", len(b), len(f.Names))
	if _, err := train.LoadSnapshot(path, dst.m, dst.o); err != nil {
		t.Logf("the last: %v", err)
	}
	if _, err := train.LoadSnapshot(filepath.Join(dir, "good.safetensors"), dst.m, dst.o); err != nil {
		t.Fatal(err)
	}
	if d := diffState(src.state(false), dst.state(false)); d != "" {
		t.Errorf("after loading the intact snapshot, %s differs from the saved run", d)
	}
}
