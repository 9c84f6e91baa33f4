package parallel

import (
	"fmt"

	"github.com/headroom-ml/headroom/autograd"
)

// The in-process group's collectives. Each runs in rounds of elements
// (one round when no rank stages): in a round every rank loads its part
// (its own memory, or a copy in its staging slice), offers it to the
// others in parts, and after a barrier reads the others' parts and stores
// its result; a barrier ends each round but the last, whose end is the
// collective's.

// offer publishes this rank's parts of the round and waits for every
// rank's.
func (c *local) offer(parts ...[]byte) {
	c.parts = append(c.parts[:0], parts...)
	c.sync()
}

// rounds calls f on the rounds [lo, hi) of n elements, step at a time,
// with a barrier between two rounds.
func (c *local) rounds(n, step int, f func(lo, hi int)) {
	for lo := 0; lo < n; lo += step {
		if lo > 0 {
			c.sync()
		}
		f(lo, min(lo+step, n))
	}
}

// split returns rank r's share [lo, hi) of n elements cut into parts
// pieces that start at multiples of 64 elements (whole cache lines).
func split(n, parts, r int) (lo, hi int) {
	per := (n + parts - 1) / parts
	per = (per + 63) &^ 63
	lo, hi = min(r*per, n), min((r+1)*per, n)
	return lo, hi
}

func (c *local) AllReduce(t *autograd.Tensor, op Op) error {
	a, err := bufOf("all_reduce", "tensor", t)
	if err != nil {
		return err
	}
	if op != Sum && op != Avg {
		return fmt.Errorf("parallel: all_reduce: unknown op %d", op)
	}
	n, es := t.Len(), a.es
	p := post{kind: "all_reduce", dt: t.DType(), a: a, na: n, op: op, data: a.data()}
	err = c.collective(p, func(ps []post) {
		c.rounds(n, round(ps, n, es, 1), func(lo, hi int) {
			// Each rank reduces its share of every rank's round into its
			// own, then copies the other shares from their owners.
			mine := c.load(a, lo, hi, 0)
			c.offer(mine)
			s, e := split(hi-lo, c.g.n, c.rank)
			ins := make([][]byte, c.g.n)
			for r, q := range c.g.ranks {
				ins[r] = q.parts[0][s*es : e*es]
			}
			c.scratch.reduce(p.dt, op, mine[s*es:e*es], ins)
			c.sync()
			for r, q := range c.g.ranks {
				if r != c.rank {
					s, e := split(hi-lo, c.g.n, r)
					copy(mine[s*es:e*es], q.parts[0][s*es:e*es])
				}
			}
			c.store(a, lo, hi, mine)
		})
	})
	if err == nil {
		t.Block().Bump()
	}
	return err
}

func (c *local) ReduceScatter(dst, src *autograd.Tensor, op Op) error {
	a, err := bufOf("reduce_scatter", "src", src)
	if err != nil {
		return err
	}
	b, err := bufOf("reduce_scatter", "dst", dst)
	if err != nil {
		return err
	}
	n, N := dst.Len(), c.g.n
	switch {
	case op != Sum && op != Avg:
		return fmt.Errorf("parallel: reduce_scatter: unknown op %d", op)
	case src.Len() != N*n || src.DType() != dst.DType():
		return fmt.Errorf("parallel: reduce_scatter: src %v %s for dst %v %s on %d ranks: want %d·%d elements of dst's dtype",
			src.Shape(), src.DType(), dst.Shape(), dst.DType(), N, N, n)
	}
	es := a.es
	p := post{kind: "reduce_scatter", dt: dst.DType(), a: a, b: b, na: src.Len(), nb: n, op: op, data: a.data()}
	err = c.collective(p, func(ps []post) {
		// A round [lo, hi) of dst: every rank offers its N slices
		// src[r·n+lo, r·n+hi), and rank r reduces the slices r of all.
		c.rounds(n, round(ps, n, es, N+1), func(lo, hi int) {
			m := (hi - lo) * es
			parts := make([][]byte, N)
			for r := range N {
				parts[r] = c.load(a, r*n+lo, r*n+hi, r*m)
			}
			c.offer(parts...)
			ins := make([][]byte, N)
			for r, q := range c.g.ranks {
				ins[r] = q.parts[c.rank]
			}
			var out []byte
			if b.host != nil {
				out = b.host[lo*es : hi*es]
			} else {
				out = c.slot(N*m, m)
			}
			c.scratch.reduce(p.dt, op, out, ins)
			c.store(b, lo, hi, out)
		})
	})
	if err == nil {
		dst.Block().Bump()
	}
	return err
}

func (c *local) AllGather(dst, src *autograd.Tensor) error {
	a, err := bufOf("all_gather", "src", src)
	if err != nil {
		return err
	}
	b, err := bufOf("all_gather", "dst", dst)
	if err != nil {
		return err
	}
	n, N := src.Len(), c.g.n
	if dst.Len() != N*n || src.DType() != dst.DType() {
		return fmt.Errorf("parallel: all_gather: dst %v %s for src %v %s on %d ranks: want %d·%d elements of src's dtype",
			dst.Shape(), dst.DType(), src.Shape(), src.DType(), N, N, n)
	}
	es := a.es
	// In place: src is dst's own slot, which then needs no copy.
	alias := src.Block() == dst.Block() && src.Offset() == dst.Offset()+c.rank*n
	p := post{kind: "all_gather", dt: src.DType(), a: a, b: b, na: n, nb: dst.Len(), data: a.data()}
	err = c.collective(p, func(ps []post) {
		c.rounds(n, round(ps, n, es, 1), func(lo, hi int) {
			c.offer(c.load(a, lo, hi, 0))
			for r, q := range c.g.ranks {
				if r != c.rank || !alias {
					c.store(b, r*n+lo, r*n+hi, q.parts[0])
				}
			}
		})
	})
	if err == nil {
		dst.Block().Bump()
	}
	return err
}

func (c *local) Broadcast(t *autograd.Tensor, root int) error {
	a, err := bufOf("broadcast", "tensor", t)
	if err != nil {
		return err
	}
	if root < 0 || root >= c.g.n {
		return fmt.Errorf("parallel: broadcast: root %d out of range for %d ranks", root, c.g.n)
	}
	n, es := t.Len(), a.es
	p := post{kind: "broadcast", dt: t.DType(), a: a, na: n, root: root, data: a.data()}
	err = c.collective(p, func(ps []post) {
		c.rounds(n, round(ps, n, es, 1), func(lo, hi int) {
			if c.rank == root {
				c.offer(c.load(a, lo, hi, 0))
				return
			}
			c.offer()
			c.store(a, lo, hi, c.g.ranks[root].parts[0])
		})
	})
	if err == nil && c.rank != root {
		t.Block().Bump()
	}
	return err
}

func (c *local) Barrier() error {
	return c.collective(post{kind: "barrier"}, func([]post) {})
}
