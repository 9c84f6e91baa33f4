package train

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// Describe lists, for a run's header line, the memory techniques the flags
// turned on that its header does not already say: mixed precision, the
// checkpointing, the capacity. Empty parts are left out. Check has checked
// the flags.
func (c *Common) Describe() string {
	ac, _ := c.AMPDType()
	_, checkpoint, _ := c.RunBlocks()
	capacity, _ := c.Capacity()
	var parts []string
	switch {
	case c.AMPParams:
		parts = append(parts, fmt.Sprintf("%s parameters with f32 master weights", ac))
		if c.GradF32 {
			parts = append(parts, "f32 gradients")
		}
	case ac != dtype.Invalid:
		parts = append(parts, fmt.Sprintf("%s autocast", ac))
	}
	if checkpoint != "" {
		parts = append(parts, checkpoint)
	}
	if c.StepInBackward {
		parts = append(parts, "optimizer step in backward")
	}
	if capacity != 0 {
		parts = append(parts, "capacity "+device.FormatBytes(capacity))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

// OffloadDesc says where the optimizer lives under --offload ("" without).
func (c *Common) OffloadDesc() string {
	if c.Offload {
		return " with the optimizer offloaded to cpu:100…"
	}
	return ""
}

// RanksDesc describes a data-parallel run for its header, as rank r (rank
// 0) sees it: the ranks' devices, how they communicate when that is not
// the plain in-process group of cpu ranks (NCCL, the host-staged group,
// MPI), the ZeRO stage and the offload.
func (c *Common) RanksDesc(r *Rank) string {
	var where string
	if c.MPI {
		where = fmt.Sprintf("%d ranks over MPI (one process per rank, rank 0 on %s)", c.Ranks, r.Dev.Name())
		if r.Via != "MPI" {
			where = fmt.Sprintf("%d ranks over %s (one process per rank, rank 0 on %s)", c.Ranks, r.Via, r.Dev.Name())
		}
	} else {
		kind, first, _ := ParseDevice(c.Device)
		if kind == "cpu" {
			first = 0
		}
		where = fmt.Sprintf("%d ranks %s:%d…%s:%d", c.Ranks, kind, first, kind, first+c.Ranks-1)
		if c.Ranks == 1 {
			where = fmt.Sprintf("1 rank %s:%d", kind, first)
		}
		if r.Via != "in-process group" {
			where += " (" + r.Via + ")"
		}
	}
	return fmt.Sprintf("%s, ZeRO stage %d%s", where, c.Zero, c.OffloadDesc())
}
