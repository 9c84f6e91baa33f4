package kernels

import "testing"

// TestFeaturesPath checks the path names that benchmarks and reports
// record, widest first, and that this machine's is consistent with its
// features.
func TestFeaturesPath(t *testing.T) {
	for _, c := range []struct {
		f    Features
		want string
	}{
		{Features{}, "go"},
		{Features{AVX2FMA: true, F16C: true}, "avx2"},
		{Features{AVX2FMA: true, F16C: true, AVX512: true}, "avx512"},
		{Features{AVX2FMA: true, F16C: true, AVX512: true, AVX512VNNI: true}, "avx512+vnni"},
		{Features{AVX2FMA: true, F16C: true, AVX512: true, AVX512BF16: true}, "avx512+bf16"},
		{Features{AVX2FMA: true, F16C: true, AVX512: true, AVX512VNNI: true, AVX512BF16: true}, "avx512+vnni+bf16"},
		{Features{AVX2FMA: true, F16C: true, AVX512: true, AVX512VNNI: true, AVX512BF16: true, AMXBF16: true}, "avx512+vnni+bf16+amx"},
	} {
		if got := c.f.Path(); got != c.want {
			t.Errorf("%+v.Path() = %q, want %q", c.f, got, c.want)
		}
	}
	if noasm && CPU != (Features{}) {
		t.Errorf("noasm build reports features %+v", CPU)
	}
	if CPU.AMXBF16 && !CPU.AVX512BF16 {
		t.Errorf("AMXBF16 without AVX512BF16: %+v", CPU)
	}
	if (CPU.AVX512VNNI || CPU.AVX512BF16) && !CPU.AVX512 {
		t.Errorf("AVX512VNNI without AVX512: %+v", CPU)
	}
	t.Logf("this machine: %s", CPU.Path())
}
