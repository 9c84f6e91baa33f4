package traintest_test

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/train"
)

// TestMain runs the package's tests with two emulated GPUs of 64 MiB, for
// the tests of cuda ranks.
func TestMain(m *testing.M) { cudatest.Main(m, 64<<20, 2) }

func parsed(t *testing.T, args ...string) *train.Common {
	t.Helper()
	var c train.Common
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.Register(fs, train.Defaults{Steps: 1, Batch: 8, LR: 0.1})
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestCheckRefusesMoreRanksThanGPUs: with two GPUs, --ranks 2 fits on
// cuda:0 and cuda:1, but not from cuda:1 on, and 3 ranks never: a usage
// error (exit 64) naming the ranks, the devices they need and the GPUs
// there are, before any device is opened.
func TestCheckRefusesMoreRanksThanGPUs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "cuda", "--ranks", "2"}, ""},
		{[]string{"--device", "cuda:1", "--zero", "1"}, ""},
		{[]string{"--device", "cuda", "--ranks", "2", "--zero", "3", "--offload"}, ""},
		{[]string{"--device", "cuda", "--ranks", "4"}, "--ranks 4 on --device cuda: the ranks need cuda:0…cuda:3, but the driver has 2 GPUs (cuda:0…cuda:1): want --ranks ≤ 2"},
		{[]string{"--device", "cuda:1", "--ranks", "2"}, "--ranks 2 on --device cuda:1: the ranks need cuda:1…cuda:2, but the driver has 2 GPUs (cuda:0…cuda:1): want --ranks ≤ 1"},
	} {
		err := parsed(t, tc.args...).Check("ranks", "zero", "offload")
		var ue *train.UsageError
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue)) {
			t.Errorf("%v: Check = %v, want a *train.UsageError with %q", tc.args, err, tc.want)
		}
	}
}

// TestRunRanksOnGPUs runs two ranks with --device cuda: rank r trains on
// cuda:r (with --offload its host is cpu:100+r) and the ranks' all-reduce
// of their ranks' numbers gives both the same sum; the header names the
// devices and how they communicate.
func TestRunRanksOnGPUs(t *testing.T) {
	c := parsed(t, "--device", "cuda", "--ranks", "2", "--zero", "1", "--offload")
	if err := c.Check("ranks", "zero", "offload"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[int]string{}
	ranks, err := c.RunRanks(0, func(r *train.Rank) error {
		x := autograd.New(r.Dev, dtype.F32, device.Communication, 3)
		defer x.Release()
		x.SetFloat32s([]float32{float32(r.Comm.Rank() + 1), 10, 100})
		if err := r.Comm.AllReduce(x, parallel.Sum); err != nil {
			return err
		}
		mu.Lock()
		got[r.Comm.Rank()] = fmt.Sprint(r.Dev.Name(), " ", r.Host.Name(), " ", x.Float32s())
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range []string{"cuda:0 cpu:100 [3 20 200]", "cuda:1 cpu:101 [3 20 200]"} {
		if got[r] != want {
			t.Errorf("rank %d: %q, want %q", r, got[r], want)
		}
	}
	desc := c.RanksDesc(ranks[0])
	if !strings.HasPrefix(desc, "2 ranks cuda:0…cuda:1 (") || !strings.Contains(desc, ranks[0].Via) || !strings.HasSuffix(desc, "ZeRO stage 1 with the optimizer offloaded to cpu:100…") {
		t.Errorf("RanksDesc = %q, want the cuda devices, %q, the stage and the offload", desc, ranks[0].Via)
	}
	t.Logf("header: %s", desc)
}
