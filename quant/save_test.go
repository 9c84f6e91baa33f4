package quant_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/optim"
	"github.com/headroom-ml/headroom/quant"
	"github.com/headroom-ml/headroom/safetensors"
)

// snapshot returns every tensor of m by name, as raw little-endian bytes
// through float64 (exact for I8 and F32).
func snapshot(m nn.Module) map[string][]float64 {
	out := map[string][]float64{}
	for _, p := range m.Params() {
		out[p.Name] = p.T.Float64s()
	}
	return out
}

func sameSnapshot(a, b map[string][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestSaveLoadRoundTrip saves converted ResNets and GPTs (static and
// dynamic), checks the file's dtypes (I8 weights, F32 scales), loads them
// into models made by NewLike and compares every tensor and the outputs.
func TestSaveLoadRoundTrip(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	dir := t.TempDir()
	r := trainedResNet(t, dev, nn.ResNetConfig{InChannels: 1}, 4)
	defer nn.Release(r)
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 4), "gpt", gptConfigs[0].cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	for _, act := range []quant.Activations{quant.Dynamic, quant.Static} {
		cfg := quant.Config{Activations: act}
		qr, err := quant.ConvertResNet(r, cfg, images(dev, 1, 2, 4, 1, 12, 12))
		if err != nil {
			t.Fatal(err)
		}
		qg, err := quant.ConvertGPT(g, cfg, tokens(dev, 1, 2, 2, 8, 23))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			q     quant.Model
			float nn.Module
			run   func(m nn.Layer) []float32
		}{
			{qr, r, func(m nn.Layer) []float32 {
				return forward(dev, m, []int{2, 1, 12, 12}, randF32(rand.New(rand.NewPCG(1, 1)), 288, 1))
			}},
			{qg, g, func(m nn.Layer) []float32 {
				return logits(dev, m, 2, 8, randTokens(rand.New(rand.NewPCG(1, 1)), 16, 23))
			}},
		} {
			path := filepath.Join(dir, act.String()+".safetensors")
			if err := quant.Save(path, c.q, map[string]string{"note": "test"}); err != nil {
				t.Fatal(err)
			}
			f, err := safetensors.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			i8, f32 := 0, 0
			for name, ft := range f.Tensors {
				switch {
				case strings.HasSuffix(name, ".weight_scale") || strings.HasSuffix(name, ".input_scale"):
					if ft.DType != dtype.F32 {
						t.Errorf("%s: %s, want F32", name, ft.DType)
					}
					f32++
				case ft.DType == dtype.I8:
					i8++
				}
			}
			if i8 == 0 || f32 == 0 {
				t.Fatalf("file has %d I8 tensors and %d scales", i8, f32)
			}
			l, err := quant.NewLike(c.float, cfg)
			if err != nil {
				t.Fatal(err)
			}
			meta, err := quant.Load(path, l)
			if err != nil {
				t.Fatal(err)
			}
			if meta["note"] != "test" || meta[quant.ActivationsKey] != act.String() {
				t.Errorf("metadata %v", meta)
			}
			if !sameSnapshot(snapshot(l), snapshot(c.q)) {
				t.Errorf("%T %v: loaded tensors differ from the saved ones", c.q, act)
			}
			if !slices.Equal(c.run(l), c.run(c.q)) {
				t.Errorf("%T %v: loaded model computes differently", c.q, act)
			}
			t.Logf("%T %v: %d I8 tensors, %d scale tensors, %d tensors in all; round trip exact", c.q, act, i8, f32, len(f.Tensors))
			nn.Release(l)
			nn.Release(c.q)
		}
	}
}

// TestLoadBadFiles loads corrupt, truncated, foreign and mismatched files
// into a converted model: each is an error naming the problem, and the
// model's tensors are unchanged.
func TestLoadBadFiles(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	dir := t.TempDir()
	r := trainedResNet(t, dev, nn.ResNetConfig{InChannels: 1}, 5)
	defer nn.Release(r)
	q, err := quant.ConvertResNet(r, quant.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(q)
	good := filepath.Join(dir, "good.safetensors")
	if err := quant.Save(good, q, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A float model's file, a static model's file, and a file whose weight
	// has another dtype.
	float := filepath.Join(dir, "float.safetensors")
	if err := nn.Save(float, r, nil); err != nil {
		t.Fatal(err)
	}
	qs, err := quant.ConvertResNet(r, quant.Config{Activations: quant.Static}, images(dev, 1, 1, 2, 1, 12, 12))
	if err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(dir, "static.safetensors")
	if err := quant.Save(static, qs, nil); err != nil {
		t.Fatal(err)
	}
	nn.Release(qs)
	f, err := safetensors.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	w := f.Tensors["resnet.fc.weight"]
	w.DType, w.Kind, w.Data = dtype.F32, "", make([]byte, 4*len(w.Data))
	f.Tensors["resnet.fc.weight"] = w
	f.SetChecksums() // a file that is consistent, only of the wrong type
	retyped := filepath.Join(dir, "retyped.safetensors")
	if err := safetensors.WriteFile(retyped, f); err != nil {
		t.Fatal(err)
	}
	// A negative scale (a corrupt payload the format cannot detect).
	f, err = safetensors.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	sc := f.Tensors["resnet.layer1.0.conv2.weight_scale"]
	sc.Data = bytes.Clone(sc.Data)
	sc.Data[4*3+3] |= 0x80 // the sign bit of element 3
	f.Tensors["resnet.layer1.0.conv2.weight_scale"] = sc
	f.SetChecksums() // as if saved so: the scale check, not the checksum, must catch it
	negative := filepath.Join(dir, "negative.safetensors")
	if err := safetensors.WriteFile(negative, f); err != nil {
		t.Fatal(err)
	}
	// Another architecture: a wider model.
	other, err := nn.SmallResNet(nn.NewBuilder(dev, dtype.F32, 1), "resnet", nn.ResNetConfig{InChannels: 1, Widths: []int{8, 16, 32}})
	if err != nil {
		t.Fatal(err)
	}
	qo, err := quant.ConvertResNet(other, quant.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wider := filepath.Join(dir, "wider.safetensors")
	if err := quant.Save(wider, qo, nil); err != nil {
		t.Fatal(err)
	}
	nn.Release(qo)
	nn.Release(other)

	flipped := bytes.Clone(data)
	flipped[10] ^= 0xff // inside the JSON header
	cases := []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "nope.safetensors"), "no such file"},
		{"empty", write("empty", nil), "safetensors"},
		{"truncated", write("truncated", data[:len(data)/2]), "safetensors"},
		{"corrupt header", write("flipped", flipped), "safetensors"},
		{"garbage", write("garbage", []byte("not a safetensors file at all, just text")), "safetensors"},
		{"float model", float, "not a file written by quant.Save"},
		{"static model", static, `"static" activations`},
		{"wrong dtype", retyped, "resnet.fc.weight"},
		{"other architecture", wider, "mismatch"},
		{"negative scale", negative, `"resnet.layer1.0.conv2.weight_scale": element 3`},
	}
	before := snapshot(q)
	for _, c := range cases {
		_, err := quant.Load(c.path, q)
		if err == nil {
			t.Errorf("%s: Load succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
		if !sameSnapshot(snapshot(q), before) {
			t.Fatalf("%s: a failed Load changed the model", c.name)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestConvertedModelCannotTrain checks that a converted model refuses to
// record a graph (a clear *autograd.Error from Forward, and from
// autograd.Try) and that an optimizer over its params is refused: they are
// all buffers, none trainable.
func TestConvertedModelCannotTrain(t *testing.T) {
	dev := cpu.New(0, device.Options{})
	r := trainedResNet(t, dev, nn.ResNetConfig{InChannels: 1}, 6)
	defer nn.Release(r)
	q, err := quant.ConvertResNet(r, quant.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(q)
	g, err := nn.NewGPT(nn.NewBuilder(dev, dtype.F32, 4), "gpt", gptConfigs[1].cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(g)
	qg, err := quant.ConvertGPT(g, quant.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(qg)
	layer, err := quant.FromLinear(r.FC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Release(layer)
	s := autograd.NewScope()
	defer s.Release()
	for _, c := range []struct {
		m nn.Layer
		x *autograd.Tensor
	}{
		{q, s.Zeros(dev, dtype.F32, 2, 1, 12, 12)},
		{qg, s.FromInt64s(dev, []int{1, 3}, []int64{1, 2, 3})},
		{layer, s.Zeros(dev, dtype.F32, 2, 64)},
	} {
		owned := s.Owned()
		err := autograd.Try(func() { c.m.Forward(c.x) })
		if s.Owned() != owned {
			t.Errorf("%T: the failed forward left %d tensors in the scope", c.m, s.Owned()-owned)
		}
		var ae *autograd.Error
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "for inference") || !strings.Contains(err.Error(), "train the float model (or use QAT) and convert again") {
			t.Errorf("%T: Forward with grad enabled: %v", c.m, err)
		} else {
			t.Logf("%T: %v", c.m, err)
		}
		if _, err := optim.NewAdam(c.m.Params(), optim.AdamConfig{}); err == nil || !strings.Contains(err.Error(), "no trainable parameters") {
			t.Errorf("%T: optimizer over the converted params: %v", c.m, err)
		}
	}
}

// FuzzLoad loads edited model files into a converted model: Load never
// panics, and when it fails the model is unchanged. The input is an edit of
// a good file (bytes [at, end) replaced by patch), with its checksums or
// without them, so that the fuzzer gets past the checksums to the checks
// behind them; and an input of a few bytes, not a whole file, keeps the
// fuzzer's minimisation of each new input quick (see the safetensors
// package documentation, Fuzzing).
func FuzzLoad(f *testing.F) {
	dev := cpu.New(0, device.Options{})
	r, err := nn.NewResNet(nn.NewBuilder(dev, dtype.F32, 1), "resnet", nn.ResNetConfig{Blocks: []int{1}, Widths: []int{4}, Stem: "small", InChannels: 1, Classes: 3})
	if err != nil {
		f.Fatal(err)
	}
	r.Train(false)
	q, err := quant.ConvertResNet(r, quant.Config{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	path := filepath.Join(dir, "f.safetensors")
	if err := quant.Save(path, q, nil); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	st, err := safetensors.Decode(good)
	if err != nil {
		f.Fatal(err)
	}
	st.Checksums = nil
	var plain bytes.Buffer
	if err := safetensors.Encode(&plain, st); err != nil {
		f.Fatal(err)
	}
	n := uint16(len(good))
	f.Add(false, uint16(0), uint16(0), []byte{})
	f.Add(true, uint16(0), uint16(0), []byte{})
	f.Add(false, n-1, uint16(1), []byte{})
	f.Add(true, uint16(8), uint16(2), []byte("[]"))
	f.Add(false, uint16(0), n, []byte{})
	before := snapshot(q)
	f.Fuzz(func(t *testing.T, unverified bool, at, end uint16, patch []byte) {
		base := good
		if unverified {
			base = plain.Bytes()
		}
		a := int(at) % (len(base) + 1)
		e := a + int(end)%(len(base)+1-a)
		if err := os.WriteFile(path, slices.Concat(base[:a], patch, base[e:]), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := quant.Load(path, q); err != nil {
			if !sameSnapshot(snapshot(q), before) {
				t.Fatalf("a failed Load changed the model: %v", err)
			}
			return
		}
		before = snapshot(q) // a file that loads may change the values
	})
}
