package main

import (
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/train"
)

const exportSynopsis = `export SNAPSHOT OUT

Writes the model of a snapshot (--save's) to OUT as nn.Save writes it — every
parameter and buffer by name, with checksums — for --init, nn.Load or another
framework. A data-parallel run's shards (SNAPSHOT, SNAPSHOT.rank1-of-N, …) are
merged, each checked first (train.ExportModel).`

// cmdExport writes a snapshot's model to a model file.
func cmdExport(args []string, stdout, _ io.Writer) error {
	pos, err := parse(newFlags("export"), exportSynopsis, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return train.Usagef("want SNAPSHOT and OUT, got %d arguments %q", len(pos), pos)
	}
	if err := train.ExportModel(pos[0], pos[1]); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: the model of %s\n", pos[1], pos[0])
	return nil
}
