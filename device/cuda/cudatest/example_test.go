package cudatest_test

import (
	"fmt"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/device/cuda/cudatest"
)

// TestMain runs this package's tests on two emulated GPUs of 64 MiB.
func TestMain(m *testing.M) { cudatest.Main(m, 64<<20, 2) }

// A package's TestMain calls Main; its tests then open emulated devices.
func Example() {
	n, err := cuda.Available()
	if err != nil {
		fmt.Println(err)
		return
	}
	d, err := cuda.Open(1, device.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	fmt.Println(n, "devices;", d.Name())
	// Output: 2 devices; cuda:1
}

// TestOpenTwo opens both emulated devices and checks their capacity is
// the memory given to Main, less nothing: a fresh device's capacity is the
// driver's free memory.
func TestOpenTwo(t *testing.T) {
	for i := range 2 {
		d := cudatest.Open(t, i, device.Options{})
		if got := d.Capacity(); got != 64<<20 {
			t.Errorf("%s capacity %d, want %d (Main's memory)", d.Name(), got, 64<<20)
		}
	}
}
