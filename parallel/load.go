package parallel

import (
	"fmt"
	"slices"

	"github.com/headroom-ml/headroom/autograd"
	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/safetensors"
)

// LoadChunk bounds the host scratch of LoadShard: it reads a file's bytes
// into one Go buffer of at most LoadChunk bytes at a time and writes them
// to the device from there.
const LoadChunk = 1 << 20

// LoadShard loads the safetensors file at path — nn.Save's: the model's
// parameters and buffers by their full names — into the model under stage
// 3, reading only what this rank keeps: of every parameter the elements
// inside this rank's pieces (the ranges a deferred build writes, see
// DDPConfig.Builder), and every buffer whole. Every tensor must be in the
// file with the model's shape and dtype; that is checked for all before
// anything is written. Call it before making the optimizer (its F32 master
// weights are copied from the shard when it is made). The tensors'
// checksums are not verified: a CRC-32C covers a whole tensor, which the
// rank does not read (safetensors.Ranges). It returns the file's metadata.
// Under stages 0–2 the parameters are whole on every rank: use nn.Load.
func (d *DDP) LoadShard(path string) (map[string]string, error) {
	if d.cfg.Zero != 3 {
		return nil, fmt.Errorf("parallel: load shard: ZeRO stage %d keeps whole parameters: use nn.Load", d.cfg.Zero)
	}
	r, err := safetensors.OpenRanges(path)
	if err != nil {
		return nil, fmt.Errorf("parallel: load shard: %w", err)
	}
	defer r.Close()
	if err := d.loadShard(r); err != nil {
		return nil, fmt.Errorf("parallel: load shard %s: %w", path, err)
	}
	return r.Metadata, nil
}

// LoadShardFrom is LoadShard from a file the caller opened (whose Read
// then counts the bytes of tensor data the rank read); the file stays
// open. The error does not name the file.
func (d *DDP) LoadShardFrom(r *safetensors.Ranges) error {
	if d.cfg.Zero != 3 {
		return fmt.Errorf("parallel: load shard: ZeRO stage %d keeps whole parameters: use nn.Load", d.cfg.Zero)
	}
	return d.loadShard(r)
}

// loadShard is LoadShard from an open file.
func (d *DDP) loadShard(r *safetensors.Ranges) error {
	if err := d.checkFile(r); err != nil {
		return err
	}
	d.dropGathered()
	err := d.eachPart(func(k, i, at, from, n int) error { return d.loadRange(r, d.names[i], d.srcs[k], at, from, n) })
	if err != nil {
		return err
	}
	for j, t := range d.buffers {
		if err := d.loadRange(r, d.bufNames[j], t, 0, 0, t.Len()); err != nil {
			return err
		}
	}
	return nil
}

// checkFile checks that r holds every parameter and buffer with its shape
// and dtype.
func (d *DDP) checkFile(r *safetensors.Ranges) error {
	names := append(slices.Clone(d.names), d.bufNames...)
	ts := append(slices.Clone(d.params), d.buffers...)
	for i, name := range names {
		dt, kind, shape, ok := r.Tensor(name)
		switch {
		case !ok:
			return fmt.Errorf("the file has no tensor %q", name)
		case dt != ts[i].DType() || !slices.Equal(shape, ts[i].Shape()):
			return fmt.Errorf("tensor %q is %s %v in the file, %s %v in the model", name, kind, shape, ts[i].DType(), ts[i].Shape())
		}
	}
	return nil
}

// loadRange copies n elements of tensor name, from element from on, into
// the contiguous dst from its element at on, LoadChunk bytes at a time.
func (d *DDP) loadRange(r *safetensors.Ranges, name string, dst *autograd.Tensor, at, from, n int) error {
	es := dst.DType().Size()
	k := dst.Device().Kernels()
	buf := make([]byte, min(n*es, LoadChunk))
	step := len(buf) / es
	for done := 0; done < n; done += step {
		m := min(step, n-done)
		if err := r.ReadAt(name, buf[:m*es], int64((from+done)*es)); err != nil {
			return err
		}
		if k != nil {
			k.Write(device.Operand{Block: dst.Block(), Off: dst.Offset() + at + done, DType: dst.DType(), Shape: []int{m}}, buf[:m*es])
		}
	}
	dst.Block().Bump()
	return nil
}
