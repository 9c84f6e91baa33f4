package nn_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/internal/kernels"
	"github.com/headroom-ml/headroom/nn"
)

// BenchmarkInit times Init.Values ("fast": the CPU's widest path; "avx2":
// the kernels limited to AVX2) and the scalar reference it replaced
// ("scalar", refValues) over 1M and 16M elements of a uniform and a normal
// fill, in MB/s of float64 output: take the ratio with -count and
// benchstat.
func BenchmarkInit(b *testing.B) {
	saved := kernels.CPU
	defer func() { kernels.CPU = saved }()
	for _, in := range []nn.Init{
		{Kind: nn.InitUniform, A: -0.1, B: 0.1, Seed: 1, Stream: 2},
		{Kind: nn.InitNormal, A: 0, B: 0.02, Seed: 1, Stream: 2},
	} {
		for _, n := range []int{1 << 20, 1 << 24} {
			v := make([]float64, n)
			for _, path := range []string{"scalar", "avx2", "fast"} {
				kernels.CPU = saved
				if path == "avx2" {
					kernels.CPU = kernels.Features{AVX2FMA: saved.AVX2FMA}
				}
				kind := map[nn.InitKind]string{nn.InitUniform: "Uniform", nn.InitNormal: "Normal"}[in.Kind]
				b.Run(fmt.Sprintf("%s/%dM/%s", kind, n>>20, path), func(b *testing.B) {
					b.SetBytes(int64(8 * n))
					for range b.N {
						if path == "scalar" {
							refValues(in, v, 1)
						} else {
							in.Values(v, 1)
						}
					}
				})
			}
		}
	}
}

// BenchmarkBuildResNet times building (and releasing) ResNet-18 and
// ResNet-50 with F32 parameters on the cpu device.
func BenchmarkBuildResNet(b *testing.B) {
	dev := cpu.New(0, device.Options{})
	defer dev.Close()
	for _, m := range []struct {
		name  string
		build func(*nn.Builder, string, nn.ResNetConfig) (*nn.ResNet, error)
	}{{"resnet18", nn.ResNet18}, {"resnet50", nn.ResNet50}} {
		b.Run(m.name, func(b *testing.B) {
			for range b.N {
				r, err := m.build(nn.NewBuilder(dev, dtype.F32, 1), "", nn.ResNetConfig{})
				if err != nil {
					b.Fatal(err)
				}
				nn.Release(r)
			}
		})
	}
}
