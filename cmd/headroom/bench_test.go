package main

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/bench"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/train"
)

// TestBenchTiming: --models splits into loss and speed models, --torch or
// a speed model times rows as a median, bad counts are usage errors.
func TestBenchTiming(t *testing.T) {
	var c bench.Config
	if err := benchTiming(&c, false, 2, 5, []string{"resnet", "resnet18", "gpt6x256"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Models, []string{"resnet"}) || !slices.Equal(c.Speed, []string{"resnet18", "gpt6x256"}) || c.Warmup != 2 || c.Timed != 5 {
		t.Errorf("config %+v", c)
	}
	c = bench.Config{}
	if err := benchTiming(&c, false, 3, 7, []string{"transformer"}); err != nil || c.Timed != 0 || c.Warmup != 3 {
		t.Errorf("no --torch, no speed model: timed %d, warmup %d, %v", c.Timed, c.Warmup, err)
	}
	c = bench.Config{}
	if err := benchTiming(&c, true, 3, 7, []string{"transformer"}); err != nil || c.Timed != 7 {
		t.Errorf("--torch: timed %d, %v", c.Timed, err)
	}
	for _, k := range []struct {
		warmup, timed, threads int
		models                 []string
		want                   string
	}{
		{2, 5, 0, []string{"vgg"}, `"vgg"`}, {1, 5, 0, []string{"resnet"}, "≥ 2 warm-up"}, {2, 4, 0, []string{"resnet"}, "≥ 5 timed"},
		{2, 5, -1, []string{"resnet"}, "--threads -1"}, {2, 5, 0, nil, "none given"},
	} {
		c := bench.Config{Threads: k.threads}
		if err := benchTiming(&c, true, k.warmup, k.timed, k.models); err == nil || !strings.Contains(err.Error(), k.want) {
			t.Errorf("%+v: %v, want %q", k, err, k.want)
		}
	}
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	c = bench.Config{Threads: 1}
	if err := benchTiming(&c, true, 2, 5, []string{"resnet"}); err != nil || runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("--threads 1: GOMAXPROCS %d, %v", runtime.GOMAXPROCS(0), err)
	}
}

// TestBenchISA: --isa takes native or avx2 only (a usage error
// otherwise, before any restart); avx2 on a CPU whose kernels run AVX-512
// restarts the program with GODEBUG=cpu.avx512f=off added to its
// environment, and a failed restart is an error that says how to do it
// by hand.
func TestBenchISA(t *testing.T) {
	saved := restart
	defer func() { restart = saved }()
	var got [][]string
	restart = func(env []string) error {
		got = append(got, env)
		return errors.New("no exec in tests")
	}
	var usage *train.UsageError
	if _, err := benchISA("avx512"); !errors.As(err, &usage) || !strings.Contains(err.Error(), "want one of native, avx2") || len(got) != 0 {
		t.Errorf("--isa avx512: %v (restarts %d)", err, len(got))
	}
	if isa, err := benchISA("native"); isa != "native" || err != nil || len(got) != 0 {
		t.Errorf("--isa native: %q, %v (restarts %d)", isa, err, len(got))
	}
	_, err := benchISA("avx2")
	if !strings.HasPrefix(cpu.KernelPath(), "avx512") {
		if len(got) != 0 {
			t.Errorf("--isa avx2 with kernels %s: restarted", cpu.KernelPath())
		}
		return
	}
	if len(got) != 1 || !slices.ContainsFunc(got[0], func(kv string) bool {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		return ok && slices.Contains(strings.Split(v, ","), bench.ISAGodebug)
	}) {
		t.Errorf("--isa avx2 on %s: restarts %q, want one with GODEBUG=…%s", cpu.KernelPath(), got, bench.ISAGodebug)
	}
	if err == nil || !strings.Contains(err.Error(), "set it yourself") {
		t.Errorf("--isa avx2, restart failing: %v", err)
	}
}

// TestCheckRounds: --rounds below 1, above 1 without PyTorch or with a
// loss model, is a usage error naming the flag; one round always goes,
// several with PyTorch and speed models only.
func TestCheckRounds(t *testing.T) {
	speed := bench.Config{Speed: []string{"resnet18"}}
	loss := bench.Config{Models: []string{"resnet"}, Speed: []string{"resnet18"}}
	for _, c := range []struct {
		rounds int
		python string
		c      bench.Config
		want   string
	}{
		{0, "python3", speed, "--rounds 0: want ≥ 1"},
		{3, "", speed, "--rounds 3: needs --torch"},
		{2, "python3", loss, "--rounds 2 with --models resnet: rounds take the speed models only"},
	} {
		var usage *train.UsageError
		if err := checkRounds(c.rounds, c.python, c.c); !errors.As(err, &usage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkRounds(%d, %q, %v): %v, want a usage error with %q", c.rounds, c.python, c.c.Models, err, c.want)
		}
	}
	if err := checkRounds(1, "", loss); err != nil {
		t.Errorf("one round: %v", err)
	}
	if err := checkRounds(3, "python3", speed); err != nil {
		t.Errorf("3 rounds of speed models with PyTorch: %v", err)
	}
}
