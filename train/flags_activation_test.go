package train_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/train"
)

// parseActivation parses args with --selective, --offload-activations and
// the checkpointing flags supported.
func parseActivation(args ...string) (*train.Common, error) {
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	c := &train.Common{}
	c.Register(fs, train.Defaults{Steps: 1, Batch: 4, LR: 0.1})
	err := c.Parse(fs, args, io.Discard, train.ParseOptions{Supported: []string{"checkpoint", "checkpoint-budget", "selective", "selective-lean", "offload-activations"}})
	return c, err
}

func TestSelectiveFlag(t *testing.T) {
	c, err := parseActivation("--selective")
	if err != nil {
		t.Fatal(err)
	}
	run, desc, err := c.RunBlocks()
	if err != nil || run == nil || desc != "selective recomputation" {
		t.Fatalf("--selective: runner %v, %q, %v; want a runner, \"selective recomputation\"", run != nil, desc, err)
	}
	c, err = parseActivation("--selective", "--selective-lean")
	if err != nil {
		t.Fatal(err)
	}
	if run, desc, err := c.RunBlocks(); err != nil || run == nil || desc != "selective recomputation (lean)" {
		t.Fatalf("--selective --selective-lean: runner %v, %q, %v; want a runner, \"selective recomputation (lean)\"", run != nil, desc, err)
	}
	c, err = parseActivation("--selective-lean")
	if err == nil {
		_, _, err = c.RunBlocks()
	}
	if err == nil || !strings.Contains(err.Error(), "give both") {
		t.Errorf("--selective-lean alone: err %v, want \"give both\"", err)
	}
	for _, other := range []string{"--checkpoint", "--checkpoint-budget=1MiB"} {
		_, err := parseActivation("--selective", other)
		if err == nil || !strings.Contains(err.Error(), "choose one") {
			t.Errorf("--selective %s: err %v, want \"choose one\"", other, err)
		}
	}
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	p := &train.Common{}
	p.Register(fs, train.Defaults{Steps: 1, Batch: 4, LR: 0.1})
	if err := p.Parse(fs, []string{"--selective"}, io.Discard, train.ParseOptions{}); err == nil || !strings.Contains(err.Error(), "selective") {
		t.Errorf("--selective where unsupported: err %v, want it refused", err)
	}
}
