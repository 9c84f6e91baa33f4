package parallel

import (
	"fmt"
	"slices"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/dtype"
)

// ShardLayout is how a rank's part of the model state is cut: what a
// sharded snapshot records of the run that wrote it, so that a resume
// with another layout is refused rather than loaded wrong.
type ShardLayout struct {
	// Rank is the rank, of Ranks.
	Rank  int `json:"rank"`
	Ranks int `json:"ranks"`
	// Zero is the ZeRO stage; Offload whether the optimizer runs on a
	// host device.
	Zero    int  `json:"zero"`
	Offload bool `json:"offload,omitempty"`
	// DType is the parameters' dtype ("bf16").
	DType string `json:"dtype"`
	// Buckets are the parameter elements u_k of each bucket (DDP.Buckets).
	Buckets []int `json:"buckets"`
	// Params are the trainable parameters, in the model's order: where
	// each lies, so that the pieces can be merged into whole parameters.
	Params []ShardParam `json:"params"`
}

// ShardParam is one trainable parameter's place in the flat buffer: its
// elements are [Offset, Offset+numel(Shape)) of bucket Bucket, whose
// N·piece elements are the ranks' pieces one after the other.
type ShardParam struct {
	Name   string `json:"name"`
	Shape  []int  `json:"shape"`
	Bucket int    `json:"bucket"`
	Offset int    `json:"offset"`
}

// ShardLayout returns the rank's layout.
func (d *DDP) ShardLayout() ShardLayout {
	l := ShardLayout{Rank: d.comm.Rank(), Ranks: d.comm.Size(), Zero: d.cfg.Zero, Offload: d.cfg.Host != nil,
		DType: d.dt.String(), Buckets: d.Buckets()}
	for i, p := range d.params {
		ps := d.lay.params[i]
		l.Params = append(l.Params, ShardParam{Name: d.names[i], Shape: p.Shape(), Bucket: ps.bucket, Offset: ps.off})
	}
	return l
}

// Equal reports whether l and o are the same layout.
func (l ShardLayout) Equal(o ShardLayout) bool {
	return l.Rank == o.Rank && l.Ranks == o.Ranks && l.Zero == o.Zero && l.Offload == o.Offload &&
		l.DType == o.DType && slices.Equal(l.Buckets, o.Buckets) &&
		slices.EqualFunc(l.Params, o.Params, func(a, b ShardParam) bool {
			return a.Name == b.Name && slices.Equal(a.Shape, b.Shape) && a.Bucket == b.Bucket && a.Offset == b.Offset
		})
}

// String describes l: "rank 1 of 2, ZeRO stage 1 with offload, bf16
// parameters in 3 buckets of [4096 4096 1024] elements" (not the
// parameters' names and shapes).
func (l ShardLayout) String() string {
	off := ""
	if l.Offload {
		off = " with offload"
	}
	return fmt.Sprintf("rank %d of %d, ZeRO stage %d%s, %s parameters in %d buckets of %v elements",
		l.Rank, l.Ranks, l.Zero, off, l.DType, len(l.Buckets), l.Buckets)
}

// ExchangeMax bounds the values Exchange moves: below 2²⁴, every one is
// an exact F32.
const ExchangeMax = 1 << 24

// Exchange is a collective: every rank passes v in [0, ExchangeMax) and
// gets every rank's, in rank order — the same slice on every rank. It is
// what two-phase operations over the ranks agree with (a sharded
// snapshot: every rank writes its file, then all keep them or none). It
// allocates Size F32 words for the call (tag communication).
func (d *DDP) Exchange(v int) ([]int, error) {
	if d.work == nil {
		return nil, fmt.Errorf("parallel: exchange: the DDP was released")
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	var out []int
	err := d.call(func() (err error) {
		out, err = ExchangeOver(d.comm, d.dev, v)
		return err
	})
	return out, err
}

// ExchangeOver is Exchange over any communicator c (a mesh's world, say),
// with its Size F32 words allocated on dev for the call.
func ExchangeOver(c Communicator, dev *device.Device, v int) ([]int, error) {
	if v < 0 || v >= ExchangeMax {
		return nil, fmt.Errorf("parallel: exchange: %d: want a value in [0, %d)", v, ExchangeMax)
	}
	n, r := c.Size(), c.Rank()
	var all, mine *autograd.Tensor
	err := autograd.Try(func() {
		all = autograd.New(dev, dtype.F32, device.Communication, n)
		all.Block().Relabel("exchange", "ddp")
		mine = view(all, r, []int{1})
		mine.SetFloat32s([]float32{float32(v)})
	})
	defer func() {
		for _, t := range []*autograd.Tensor{mine, all} {
			if t != nil {
				t.Release()
			}
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("parallel: exchange: %w", err)
	}
	if err := c.AllGather(all, mine); err != nil {
		return nil, fmt.Errorf("parallel: exchange: %w", err)
	}
	out := make([]int, n)
	for q, w := range all.Float32s() {
		out[q] = int(w)
	}
	return out, nil
}

// Gather makes every rank's parameters agree with the rank's pieces after
// they were written in place (a snapshot's shard loaded into Params):
// under stages 1 and 2 each bucket of the flat buffer is all-gathered
// from the ranks' pieces, as after a step; under stage 3 whatever was
// gathered is freed (it would be out of date) and nothing is gathered;
// under stage 0 every rank holds every parameter and nothing happens.
// Every rank calls it (it is a collective under stages 1 and 2).
func (o *Optimizer) Gather() error {
	if err := o.d.settle(); err != nil {
		return err
	}
	if err := o.gatherRegions(); err != nil {
		return fmt.Errorf("parallel: gather: %w", err)
	}
	return nil
}

// settle waits for the gradients' reduction and, under stage 3, frees
// what was gathered (Unshard included): what comes next changes the
// pieces, and a gathered copy would be out of date.
func (d *DDP) settle() error {
	if err := d.finish(); err != nil {
		return err
	}
	if d.cfg.Zero == 3 {
		d.dropGathered()
		d.reshard3()
	}
	return nil
}

// gatherRegions all-gathers each bucket of the flat buffer from the
// ranks' pieces (stages 1 and 2).
func (o *Optimizer) gatherRegions() error {
	for k, reg := range o.regions {
		if err := o.d.comm.AllGather(reg, o.pieces[k]); err != nil {
			return fmt.Errorf("gathering bucket %d: %w", k, err)
		}
	}
	return nil
}
