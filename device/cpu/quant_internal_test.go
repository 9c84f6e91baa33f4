package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/headroom-ml/headroom/device"
)

// TestI8WorkspaceAgrees checks that the workspaces the device charges for an
// int8 convolution (device.Conv2d.I8Workspace, which meta uses too) are
// exactly I8Slots times what one worker of the kernel takes: the two
// formulas are written twice, once on each side of the seam.
func TestI8WorkspaceAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for trial := range 2000 {
		g := 1 + rng.IntN(3)
		p := device.Conv2d{
			N: 1 + rng.IntN(40), C: g * (1 + rng.IntN(8)), H: 1 + rng.IntN(40), W: 1 + rng.IntN(40),
			K: g * (1 + rng.IntN(8)), R: 1 + rng.IntN(5), S: 1 + rng.IntN(5),
			StrideH: 1 + rng.IntN(2), StrideW: 1 + rng.IntN(2), PadH: rng.IntN(3), PadW: rng.IntN(3),
			DilH: 1 + rng.IntN(2), DilW: 1 + rng.IntN(2), Groups: g,
		}
		if trial%3 == 0 {
			p.StrideH, p.StrideW = 1, 1
		}
		p.OutSize()
		if p.OH <= 0 || p.OW <= 0 {
			continue
		}
		col, acc := p.I8Workspace()
		kc, ka := convArgs(p).I8Workspace(p.I8Chunk())
		if col != device.I8Slots*kc || acc != device.I8Slots*ka {
			t.Fatalf("%+v: device charges col %d, acc %d; the kernel takes %d and %d per worker (× %d slots)", p, col, acc, kc, ka, device.I8Slots)
		}
	}
}
