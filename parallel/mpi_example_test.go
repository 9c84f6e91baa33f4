//go:build mpi

package parallel_test

import (
	"fmt"
	"log"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/parallel"
)

// A program started as `mpirun -np 2 ./prog` averages a gradient across
// its processes. (Not run by go test: it needs mpirun; TestMPI launches
// the real checks.)
func ExampleNewMPI() {
	comm, err := parallel.NewMPI()
	if err != nil {
		log.Fatal(err)
	}
	defer comm.Finalize()

	dev := cpu.New(0, device.Options{})
	g := autograd.New(dev, dtype.F32, device.Gradient, 4) // (4,)
	defer g.Release()
	g.Fill(float64(comm.Rank() + 1)) // rank r holds r+1

	if err := comm.AllReduce(g, parallel.Avg); err != nil {
		// a rank that failed called Abort: every rank ends the step here
		log.Fatal(err)
	}
	fmt.Printf("rank %d of %d: %v\n", comm.Rank(), comm.Size(), g.Float32s())
	// rank 0 of 2: [1.5 1.5 1.5 1.5]
	// rank 1 of 2: [1.5 1.5 1.5 1.5]
}
