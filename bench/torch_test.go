package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// Debian's paths, as /proc/self/maps shows them once resolved.
const (
	openblasAlt = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"
	openblasLib = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so"
	netlib      = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"
)

// TestClassifyBLAS: the loaded libraries decide, the optimized one wins
// over a libblas.so beside it, and the folder of Debian's alternatives
// names the BLAS behind a plain libblas.so.3.
func TestClassifyBLAS(t *testing.T) {
	for _, c := range []struct {
		paths     []string
		name      string
		reference bool
	}{
		{[]string{openblasAlt, openblasLib}, "OpenBLAS", false},
		{[]string{openblasAlt}, "OpenBLAS", false},
		{[]string{netlib}, "reference BLAS (netlib)", true},
		{[]string{netlib, "/opt/intel/lib/libmkl_rt.so.2"}, "MKL", false},
		{[]string{"/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3"}, "BLIS", false},
		{[]string{"/usr/lib/x86_64-linux-gnu/atlas/libblas.so.3"}, "ATLAS", false},
		{nil, "none found", false},
	} {
		b := ClassifyBLAS(c.paths)
		if b.Name != c.name || b.Reference != c.reference {
			t.Errorf("ClassifyBLAS(%q) = %+v, want %s (reference %v)", c.paths, b, c.name, c.reference)
		}
	}
}

// TestTorchEnvCheck: the reference BLAS and other thread counts are
// refused, with the library and the install command in the message.
func TestTorchEnvCheck(t *testing.T) {
	good := TorchEnv{Torch: "1.13", BLASPaths: []string{openblasAlt, openblasLib}, Threads: 2, InteropThreads: 2}
	if err := good.Check(2); err != nil {
		t.Errorf("OpenBLAS at 2 threads: %v", err)
	}
	ref := good
	ref.BLASPaths = []string{netlib}
	err := ref.Check(2)
	var re *ReferenceBLASError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), netlib) || !strings.Contains(err.Error(), "apt-get install libopenblas0-pthread") {
		t.Errorf("reference BLAS: %v", err)
	}
	for _, e := range []TorchEnv{{BLASPaths: good.BLASPaths, Threads: 1, InteropThreads: 2}, {BLASPaths: good.BLASPaths, Threads: 2, InteropThreads: 1}} {
		if err := e.Check(2); err == nil || !strings.Contains(err.Error(), "want the same") {
			t.Errorf("threads %d/%d against 2: %v", e.Threads, e.InteropThreads, err)
		}
	}
}

// TestMedian against the definition: for an odd count, as many values
// at or below as at or above, and one of the values; for an even count,
// the mean of the largest of the lower half and the smallest of the upper.
func TestMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 12; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(rng.IntN(7)) // ties
		}
		before := append([]float64{}, xs...)
		m := Median(xs)
		for i := range xs {
			if xs[i] != before[i] {
				t.Fatalf("Median changed its input: %v → %v", before, xs)
			}
		}
		if want := medianByCounting(xs); m != want {
			t.Errorf("Median(%v) = %g, want %g", xs, m, want)
		}
	}
	if Median(nil) != 0 {
		t.Error("Median(nil) ≠ 0")
	}
}

// medianByCounting finds the k-th smallest values by counting, not
// sorting.
func medianByCounting(xs []float64) float64 {
	kth := func(k int) float64 { // the value with < k below it and ≥ k at or below
		for _, x := range xs {
			below, atOrBelow := 0, 0
			for _, y := range xs {
				if y < x {
					below++
				}
				if y <= x {
					atOrBelow++
				}
			}
			if below < k && atOrBelow >= k {
				return x
			}
		}
		panic("no k-th value")
	}
	n := len(xs)
	if n%2 == 1 {
		return kth(n/2 + 1)
	}
	return (kth(n/2) + kth(n/2+1)) / 2
}

// TestTimeSteps: warm-ups run untimed, each timed step is timed, too few
// of either is refused before any step, and a step's error stops it.
func TestTimeSteps(t *testing.T) {
	calls := 0
	secs, err := TimeSteps(func() error { calls++; return nil }, 2, 5)
	if err != nil || calls != 7 || len(secs) != 5 {
		t.Errorf("2 + 5 steps: %d calls, %d times, %v", calls, len(secs), err)
	}
	for _, c := range [][2]int{{1, 5}, {2, 4}} {
		calls = 0
		if _, err := TimeSteps(func() error { calls++; return nil }, c[0], c[1]); err == nil || calls != 0 {
			t.Errorf("%d + %d steps: %d calls, %v", c[0], c[1], calls, err)
		}
	}
	boom := errors.New("boom")
	if _, err := TimeSteps(func() error { return boom }, 2, 5); !errors.Is(err, boom) {
		t.Errorf("failing step: %v", err)
	}
}

// TestConfigTiming: Config refuses bad speed models and timings before
// any work.
func TestConfigTiming(t *testing.T) {
	for _, c := range []Config{{Speed: []string{"vgg"}}, {Speed: []string{"resnet18"}, Device: "cuda"}, {Timed: 4}, {Warmup: 1},
		{Threads: -1}} {
		if _, err := Run(c); err == nil {
			t.Errorf("Run(%+v): no error", c)
		}
	}
	if w, n := (Config{}).timing(); w != 2 || n != 5 {
		t.Errorf("default timing %d + %d, want 2 + 5", w, n)
	}
}

func torchFixture(paths ...string) *TorchResult {
	return &TorchResult{TorchEnv: TorchEnv{Torch: "1.13", OneDNN: "2.6.3", BLASPaths: paths, Threads: 2, InteropThreads: 2},
		Rows: []TorchRow{
			{Model: "resnet", Technique: "plain", Params: 100, SecondsPerStep: 0.5, FinalLoss: 2.1, PeakBytes: 2 << 20, PeakNote: "profiler",
				Warmup: 2, StepSeconds: []float64{0.5, 0.4, 0.6, 0.5, 0.5}},
			{Model: "resnet", Technique: "checkpoint √n"}, // headroom did not run it: left out
			{Model: "resnet18", Technique: "amp bf16", Params: 11173962, SecondsPerStep: 0.3, Speed: true, Warmup: 2,
				StepSeconds: []float64{0.3, 0.3, 0.3, 0.3, 0.3}},
		}}
}

// TestSideBySide: the environment above the table, the median of the
// timed steps, the ratio, the speed rows without loss, and a parameter
// mismatch marked.
func TestSideBySide(t *testing.T) {
	res := &Result{CPUModel: "AMD EPYC 9B45", Kernels: "avx512+vnni+bf16", Threads: 2,
		Rows: []Row{{Model: "resnet", Technique: "plain", Params: 100, Peak: trainPeak(1 << 20), SecondsPerStep: 9, FinalLoss: 2,
			StepSeconds: []float64{0.3, 0.1, 0.2, 0.2, 0.9}}},
		Speed: []SpeedRow{{Model: "resnet18", Technique: "amp bf16", Params: 11173963, SecondsPerStep: 0.6, PeakBytes: 3 << 20}}}
	s := SideBySide(res, torchFixture(openblasAlt, openblasLib))
	for _, want := range []string{
		"CPU: AMD EPYC 9B45; headroom kernels avx512+vnni+bf16, 2 threads",
		"PyTorch 1.13, oneDNN 2.6.3, BLAS OpenBLAS (" + openblasLib + "), 2 intra-op and 2 inter-op threads",
		"after 2 untimed warm-ups",
		"| resnet | plain | 2 / 2 | 100 | 100 | 1.00 MiB | 2.00 MiB | 0.200 | 0.500 (5) | 0.40 | 2.0000 | 2.1000 |",
		"| resnet18 | amp bf16 | 2 / 2 | 11173963 ≠ | 11173962 | 3.00 MiB | – | 0.600 | 0.300 (5) | 2.00 | – | – |",
		"resnet18: headroom has 11173963 parameters, PyTorch 11173962",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("side by side lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "checkpoint") || strings.Contains(s, "reference BLAS") || strings.Contains(s, "WARNING") {
		t.Errorf("side by side:\n%s", s)
	}
	var js bytes.Buffer
	if err := json.NewEncoder(&js).Encode(torchFixture()); err != nil || !strings.Contains(js.String(), `"peak_bytes":2097152`) {
		t.Errorf("torch JSON %s, %v", js.String(), err)
	}
}

// TestSideBySideReferenceBLAS: a result made on the reference BLAS warns
// above the table and marks every row.
func TestSideBySideReferenceBLAS(t *testing.T) {
	res := &Result{Rows: []Row{{Model: "resnet", Technique: "plain", Params: 100, SecondsPerStep: 0.1}},
		Speed: []SpeedRow{{Model: "resnet18", Technique: "amp bf16", Params: 11173962, SecondsPerStep: 0.6}}}
	s := SideBySide(res, torchFixture(netlib))
	if !strings.Contains(s, "WARNING: PyTorch ran on the reference BLAS (netlib) ("+netlib+")") ||
		strings.Count(s, "(reference BLAS) |") != 2 || !strings.Contains(s, "0.100 (mean)") {
		t.Errorf("side by side on the reference BLAS:\n%s", s)
	}
}

// TestSideBySideOpenBLASCore: OpenBLAS's core is printed, and an AVX2
// core on an AVX-512 machine warned about; an AVX-512 core is not.
func TestSideBySideOpenBLASCore(t *testing.T) {
	res := &Result{Kernels: "avx512+vnni+bf16", Threads: 2}
	for _, c := range []struct {
		core string
		warn bool
	}{{"Haswell", true}, {"Zen", true}, {"SkylakeX", false}, {"Cooperlake", false}} {
		tr := torchFixture(openblasAlt, openblasLib)
		tr.OpenBLASCore, tr.OpenBLASThreads = c.core, 2
		s := SideBySide(res, tr)
		warned := strings.Contains(s, "WARNING: OpenBLAS ran its "+c.core+" kernels, not AVX-512 ones")
		if !strings.Contains(s, "- OpenBLAS core "+c.core+", 2 threads") || warned != c.warn {
			t.Errorf("core %s: warned %v, want %v:\n%s", c.core, warned, c.warn, s)
		}
	}
}
