package train

import (
	"fmt"
	"io"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
)

// UndoHost is the index of the host device cpu:UndoHost that holds
// --step-in-backward's undo copies in a single-device run (the index
// --offload's host of rank 0 has).
const UndoHost = 100

// openUndoHost gives st the host device cpu:UndoHost, without a limit,
// when it steps inside backward, and returns it (nil otherwise); the
// caller closes it.
func openUndoHost(st *Stepper) *device.Device {
	if !st.StepInBackward {
		return nil
	}
	st.Host = cpu.New(UndoHost, device.Options{})
	return st.Host
}

// reportUndoHost records the host's peaks in rep.Extra["host"] and prints
// its peak (nothing when host is nil).
func reportUndoHost(out io.Writer, rep *Report, host *device.Device) {
	if host == nil {
		return
	}
	p := Peaks(host.Stats())
	rep.Extra["host"] = p
	fmt.Fprintf(out, "host %s (the step-in-backward undo copies, tag optimizer, op step_undo): peak %s\n", host, device.FormatBytes(p.Total))
}
