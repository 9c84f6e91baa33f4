package parallel_test

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/parallel"
)

// Three ranks agree on a two-phase step: each says whether its part
// succeeded (rank 1's did not) and every rank gets the same answers, in
// rank order, so that all keep their work or all undo it.
func ExampleExchangeOver() {
	comms := parallel.NewGroup(3)
	got := make([][]int, 3)
	err := parallel.Run(comms, func(c parallel.Communicator) error {
		dev := cpu.New(c.Rank(), device.Options{})
		ok := 1
		if c.Rank() == 1 {
			ok = 0
		}
		all, err := parallel.ExchangeOver(c, dev, ok)
		got[c.Rank()] = all
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got)
	// Output:
	// [[1 0 1] [1 0 1] [1 0 1]]
}
