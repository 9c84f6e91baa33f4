package main

import (
	"os"

	"github.com/headroom-ml/headroom/examples/resnet/run"
)

func main() { os.Exit(run.Main(os.Args[1:], os.Stdout, os.Stderr)) }
