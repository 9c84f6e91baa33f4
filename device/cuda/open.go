package cuda

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/internal/cuda"
)

// WorkspaceBytes is the cuBLAS workspace that Open allocates on a GPU of
// compute capability major (tag workspace, op "cublas", resident):
// NVIDIA's recommendation for Hopper (sm_90) and later is 32 MiB; 4 MiB
// serves earlier GPUs. The planner's cuda plans allocate the same block.
func WorkspaceBytes(major int) int64 {
	if major >= 9 {
		return 32 << 20
	}
	return 4 << 20
}

// Available returns the number of CUDA devices, or why there are none
// (errors.Is ErrNoDriver when libcuda is missing or finds no GPU).
func Available() (int, error) {
	drv, err := cuda.LoadDriver()
	if err != nil {
		return 0, err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoDriver, err)
	}
	return n, nil
}

// Open opens device cuda:index. Its capacity is the smaller of
// o.Capacity (when set) and the memory the driver reports free now. It
// needs libcuda, libnvrtc and libcublas (see the package documentation for
// how they are found); the error says which is missing (errors.Is
// ErrNoDriver, ErrNoNVRTC, ErrNoCublas, ErrNoDevice).
func Open(index int, o device.Options) (*device.Device, error) {
	name := fmt.Sprintf("cuda:%d", index)
	n, err := Available()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if index < 0 || index >= n {
		return nil, fmt.Errorf("%s: %w (this machine has %d)", name, ErrNoDevice, n)
	}
	rtc, err := cuda.LoadNVRTC()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	blas, err := cuda.LoadCublas()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	drv, _ := cuda.LoadDriver()
	g := &gpu{name: name, index: index, drv: drv}
	if g.dev, err = drv.Device(index); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := g.start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b := &backend{g: g, segs: map[uintptr]*vseg{}}
	g.be = b
	var free int64
	var major int
	err = g.do(func() error {
		var err error
		if major, err = g.init(rtc, blas); err != nil {
			return err
		}
		free, _, err = drv.MemInfo()
		return err
	})
	if err != nil {
		b.teardown()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cap := free
	if o.Capacity > 0 {
		cap = min(cap, o.Capacity)
	}
	dev := device.New(name, b, device.Options{Capacity: cap})
	if err := b.workspace(dev, WorkspaceBytes(major)); err != nil {
		dev.Close()
		return nil, fmt.Errorf("%s: cuBLAS workspace: %w", name, err)
	}
	backends.Store(dev, b)
	return dev, nil
}

// backends maps each open device to its backend.
var backends sync.Map

// backendOf returns the backend of a device opened by Open (nil for others).
func backendOf(d *device.Device) *backend {
	b, _ := backends.Load(d)
	be, _ := b.(*backend)
	return be
}

// init runs on the worker: it reads the compute capability, decides on
// VMM, and makes the staging buffers, the module cache and cuBLAS's handle.
func (g *gpu) init(rtc *cuda.NVRTC, blas *cuda.Cublas) (int, error) {
	major, err := g.drv.Attribute(g.dev, cuda.AttrComputeCapabilityMajor)
	if err != nil {
		return 0, err
	}
	minor, err := g.drv.Attribute(g.dev, cuda.AttrComputeCapabilityMinor)
	if err != nil {
		return 0, err
	}
	g.arch = fmt.Sprintf("compute_%d%d", major, minor)
	if g.model, err = g.drv.DeviceName(g.dev); err != nil {
		return 0, err
	}
	g.vmm = g.drv.VMM && os.Getenv("HEADROOM_CUDA_VMM") != "0"
	if g.vmm {
		if v, err := g.drv.Attribute(g.dev, cuda.AttrVMMSupported); err != nil || v == 0 {
			g.vmm = false
		}
	}
	if g.vmm {
		if g.gran, err = g.drv.Granularity(g.dev); err != nil {
			return 0, err
		}
	}
	g.mods = newModules(rtc, g.arch)
	if g.stage, err = newStaging(g.drv); err != nil {
		return 0, err
	}
	g.tf32 = TF32()
	if g.blas, err = blas.NewHandle(g.stream, g.tf32); err != nil {
		return 0, err
	}
	return major, nil
}

// TF32 reports whether F32 GEMMs may use TF32 tensor cores: only when the
// environment sets HEADROOM_CUDA_TF32=1 (off by default, so that results
// match the cpu device within F32 tolerances). It is read when a device
// opens.
func TF32() bool { return os.Getenv("HEADROOM_CUDA_TF32") == "1" }

// KernelPath names what runs dev's kernels when Open opened it: the
// compute capability and the driver's name of the GPU, as in "cuda sm_90
// (NVIDIA H200)", with "+tf32" when its F32 GEMMs may use TF32; "" for a
// device of another backend.
func KernelPath(dev *device.Device) string {
	b := backendOf(dev)
	if b == nil {
		return ""
	}
	path := fmt.Sprintf("cuda sm_%s (%s)", strings.TrimPrefix(b.g.arch, "compute_"), b.g.model)
	if b.g.tf32 {
		path += " +tf32"
	}
	return path
}

// workspace gives cuBLAS a block of the device's own memory, tagged
// workspace and marked resident (never a leak).
func (b *backend) workspace(dev *device.Device, n int64) error {
	ws, err := dev.Alloc(n, device.Label{Tag: device.Workspace, Op: "cublas"})
	if err != nil {
		return err
	}
	ws.MarkResident()
	b.ws = ws
	return b.g.do(func() error { return b.g.blas.SetWorkspace(cuda.DevPtr(ws.Ptr()), n) })
}

// Close releases the cuBLAS workspace and marks the backend closing; the
// context goes with the device's last segment.
func (b *backend) Close() {
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return
	}
	b.closing = true
	ws := b.ws
	b.ws = nil
	b.mu.Unlock()
	if ws != nil {
		// cuBLAS must not use the workspace after it is freed.
		_ = b.g.do(func() error { return b.g.blas.SetWorkspace(0, 0) })
		ws.Release()
	}
	b.mu.Lock()
	none := b.segments == 0
	b.mu.Unlock()
	if none {
		b.teardown()
	}
}

// teardown gives back everything the device holds in its context and
// ends the worker.
func (b *backend) teardown() {
	g := b.g
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	var errs []error
	_ = g.do(func() error {
		errs = append(errs, b.closeComm(), g.drv.StreamSync(g.stream))
		if g.blas != nil {
			g.blas.Destroy()
		}
		if g.mods != nil {
			errs = append(errs, g.mods.unload(g.drv))
		}
		if g.stage != nil {
			errs = append(errs, g.stage.free(g.drv))
		}
		errs = append(errs, g.drv.StreamDestroy(g.stream))
		g.params.Free()
		errs = append(errs, g.drv.ReleasePrimary(g.dev))
		return nil
	})
	g.life.Lock()
	g.done = true
	close(g.q)
	g.life.Unlock()
	g.workers.Wait()
	if err := errors.Join(errs...); err != nil {
		g.fail(&opError{"close", err})
	}
}
