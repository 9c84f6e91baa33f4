package train

import (
	"fmt"
	"strings"

	"github.com/headroom-ml/headroom/parallel"
	"github.com/headroom-ml/headroom/safetensors"
)

// ExportModel writes the model of the snapshot at path to out as nn.Save
// does — every parameter and buffer by its name, with checksums — for
// --init, nn.Load or another framework. A single-device snapshot's
// "model." tensors are written as they are; the shards of a data-parallel
// one (SaveShard's, at ShardPath(path, r, N)) are merged: each rank's file
// is read and checked in turn (its checksums, its set, its layout), and
// each parameter is cut out of its bucket, the ranks' pieces laid end to
// end (the buffers are rank 0's); a split snapshot's pipeline stages are
// joined (mergeStages: --pp only; --tp slices and ZeRO pieces are
// refused). It holds the model's bytes once, in Go
// memory, and one shard file at a time; out is written atomically.
func ExportModel(path, out string) error {
	fail := func(err error) error { return fmt.Errorf("export %s: %w", path, err) }
	f, snap, err := readSnapshot(path)
	if err != nil {
		return fail(err)
	}
	m := &safetensors.File{Tensors: map[string]safetensors.Tensor{}}
	if snap.Split != nil { // the stages' files, one after the other
		if err := mergeStages(path, snap, m); err != nil {
			return fail(err)
		}
	}
	l := snap.Shard
	for name, t := range f.Tensors {
		if n, ok := strings.CutPrefix(name, "model."); ok && (l == nil || l.Zero == 0 || !isPiece(n)) {
			m.Tensors[n] = t
		}
	}
	if l != nil && l.Zero > 0 {
		if err := mergePieces(path, snap, f, m); err != nil {
			return fail(err)
		}
	}
	if len(m.Tensors) == 0 {
		return fail(fmt.Errorf("the snapshot holds no model tensors"))
	}
	m.Sort()
	m.SetChecksums()
	if err := safetensors.WriteFile(out, m); err != nil {
		return fail(err)
	}
	return nil
}

// isPiece reports whether a model tensor's name is a rank's piece of a
// bucket ("bucket<k>.rank<r>"), not a buffer's.
func isPiece(name string) bool {
	var k, r int
	n, err := fmt.Sscanf(name, "bucket%d.rank%d", &k, &r)
	return err == nil && n == 2 && name == fmt.Sprintf("bucket%d.rank%d", k, r)
}

// mergePieces adds to m every parameter of the sharded snapshot whose rank
// 0 file f (record snap) is at path: bucket k is the ranks' pieces
// "model.bucket<k>.rank<r>" end to end.
func mergePieces(path string, snap Snapshot, f *safetensors.File, m *safetensors.File) error {
	l := snap.Shard
	buckets := make([][]byte, len(l.Buckets))
	var kind safetensors.Tensor
	for r := range l.Ranks {
		file := ShardPath(path, r, l.Ranks)
		fr, sr := f, snap
		if r > 0 {
			var err error
			if fr, sr, err = readSnapshot(file); err != nil {
				return err
			}
		}
		switch {
		case sr.Shard == nil || sr.Set != snap.Set:
			return fmt.Errorf("%s is not a shard of the same save as %s", file, path)
		case sr.Shard.Rank != r || !sameModel(*sr.Shard, *l):
			return fmt.Errorf("%s was written by %s, %s by %s", file, sr.Shard, path, l)
		}
		for k := range buckets {
			t, ok := fr.Tensors[fmt.Sprintf("model.bucket%d.rank%d", k, r)]
			if !ok {
				return fmt.Errorf("%s has no piece of bucket %d", file, k)
			}
			buckets[k], kind = append(buckets[k], t.Data...), t
		}
	}
	es := kind.DType.Size()
	for _, p := range l.Params {
		n := 1
		for _, s := range p.Shape {
			n *= s
		}
		b := buckets[p.Bucket]
		if es <= 0 || (p.Offset+n)*es > len(b) {
			return fmt.Errorf("parameter %q (%v at %d of bucket %d) lies outside the bucket's %d bytes", p.Name, p.Shape, p.Offset, p.Bucket, len(b))
		}
		m.Tensors[p.Name] = safetensors.Tensor{DType: kind.DType, Shape: p.Shape, Data: b[p.Offset*es : (p.Offset+n)*es]}
	}
	return nil
}

// sameModel reports whether two ranks' layouts are of one run: all but the
// rank agree.
func sameModel(a, b parallel.ShardLayout) bool {
	a.Rank = b.Rank
	return a.Equal(b)
}
