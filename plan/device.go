package plan

import (
	"fmt"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/device/meta"
)

// The device kinds a plan is for (Config.Device).
const (
	CPU  = "cpu"
	CUDA = "cuda"
)

// DefaultCUDAMajor is the compute capability major of a cuda plan when
// Config.CUDAMajor is 0: 9, Hopper (H100, H200).
const DefaultCUDAMajor = 9

// checkDevice checks the device kind and the compute capability.
func (c Config) checkDevice() error {
	switch {
	case c.Device != CPU && c.Device != CUDA:
		return fmt.Errorf("device %q: want cpu or cuda", c.Device)
	case c.Device == CPU && c.CUDAMajor != 0:
		return fmt.Errorf("compute capability %d for a cpu plan: it is a cuda device's", c.CUDAMajor)
	case c.CUDAMajor < 0 || c.CUDAMajor > 99:
		return fmt.Errorf("compute capability major %d: want 1…99 (9: H100, H200; 8: A100; 7: V100)", c.CUDAMajor)
	}
	return nil
}

// Resident returns what a device of c's kind holds from the moment it
// opens, before any tensor: nothing on cpu; on cuda the cuBLAS workspace
// that device/cuda allocates at Open, cuda.WorkspaceBytes(CUDAMajor)
// bytes (32 MiB from sm_90 on, 4 MiB before), tag workspace, op cublas.
// A cuda plan's meta devices allocate it first, so that they account
// what the GPU does.
func (c Config) Resident() int64 {
	if c.Device != CUDA {
		return 0
	}
	return cuda.WorkspaceBytes(c.CUDAMajor)
}

// devices makes and closes the devices of one run: meta devices for a
// prediction, or the real devices of c's kind for Measure (cpu devices, or
// cuda:0…cuda:N-1 opened through device/cuda).
type devices struct {
	c          Config
	dev, hosts []*device.Device
	resident   []*device.Block // per rank: the meta device's stand-in for cuBLAS's workspace
}

func newDevices(c Config) *devices {
	n := c.world()
	return &devices{c: c, dev: make([]*device.Device, n), hosts: make([]*device.Device, n), resident: make([]*device.Block, n)}
}

// open makes rank's compute device (and its offload host with
// c.Offload). A capacity of 0 means MaxBytes on meta and cpu devices (what
// the accounting can count) and the driver's free memory on cuda.
func (ds *devices) open(rank int) error {
	c := ds.c
	capacity := c.Capacity
	if capacity == 0 && !(c.measure && c.Device == CUDA) {
		capacity = MaxBytes
	}
	o := device.Options{Capacity: capacity}
	switch {
	case c.measure && c.Device == CUDA:
		d, err := cuda.Open(rank, o)
		if err != nil {
			return err
		}
		ds.dev[rank] = d
	case c.measure:
		ds.dev[rank] = cpu.New(rank, o)
	default:
		ds.dev[rank] = meta.New(rank, o)
		if n := c.Resident(); n > 0 {
			ws, err := ds.dev[rank].Alloc(n, device.Label{Tag: device.Workspace, Op: "cublas"})
			if err != nil {
				return err
			}
			ws.MarkResident()
			ds.resident[rank] = ws
		}
	}
	if c.Offload || c.OffloadActivations || c.ActivationBudget > 0 || c.StepInBackward { // the offload host; the activations' and the step-in-backward undo copies' host
		ho := device.Options{Capacity: MaxBytes}
		if c.measure {
			ds.hosts[rank] = cpu.New(100+rank, ho)
		} else {
			ds.hosts[rank] = meta.New(100+rank, ho)
		}
	}
	return nil
}

// close releases the resident blocks and closes every device, returning
// what they still held as a *device.LeakError. The devices' statistics
// stay readable after it.
func (ds *devices) close() error {
	for i, b := range ds.resident {
		if b != nil {
			b.Release()
			ds.resident[i] = nil
		}
	}
	return closeAll(ds.dev, ds.hosts)
}
