package checkpoint

import (
	"fmt"
	"math"
)

// Rates are the constants a ModeBudget turns bytes and FLOPs into
// estimated extra seconds with: documented defaults (DefaultRates), not
// measurements of the machine at hand.
type Rates struct {
	// FLOPS is the matrix-product rate, FLOP/s: a recomputed layer costs
	// its forward matmul FLOPs over it.
	FLOPS float64
	// Memory is the rate pointwise ops, norms and softmax move bytes,
	// B/s: a selectively recomputed layer costs the bytes it drops over
	// it (each recomputed tensor is written once), a recomputed one too.
	Memory float64
	// Copy is the device↔host copy rate, B/s: an offloaded layer costs
	// twice the bytes it moves (out, and back) over it.
	Copy float64
}

// DefaultRates are the rates of one cpu core of the development machine
// as round numbers: 100 GFLOP/s of matmul, 10 GB/s for pointwise ops and
// for copies.
var DefaultRates = Rates{FLOPS: 1e11, Memory: 1e10, Copy: 1e10}

// Decision is the mode a ModeBudget chose for one layer and what it
// measured of it.
type Decision struct {
	Layer int  `json:"layer"`
	Mode  Mode `json:"mode"`
	// Freed is the bytes the mode takes off the step's activation peak
	// (measured: plain's peak less the peak with only this layer in this
	// mode); Held is the most any mode frees for the layer less Freed.
	Freed int64 `json:"freed_bytes"`
	Held  int64 `json:"held_bytes"`
	// Extra is the estimated extra seconds per step (see Rates).
	Extra float64 `json:"est_extra_seconds"`
}

// MarshalText names the mode in JSON.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// Bytes are the bytes the decision recomputes and offloads.
func (d Decision) Bytes() (recomputed, offloaded int64) {
	if d.Mode == Offloaded {
		return 0, d.Freed
	}
	return d.Freed, 0
}

// ModeBudget chooses a Mode per layer of a stack so that the step's
// activation peak stays under Bytes at the least estimated extra time.
// Peak runs the real step with the given modes (on meta, to plan) and
// returns its activation peak; FLOPs[i] is layer i's forward matmul FLOPs,
// which Recompute runs again; SelectiveRecompute hands the kept products'
// outputs back and runs only SelectiveFLOPs[i] of them again (nil: none;
// a materialized attention's bmm products).
type ModeBudget struct {
	Bytes          int64
	FLOPs          []int64
	SelectiveFLOPs []int64
	Rates          Rates
	Peak           func([]Mode) (int64, error)
}

// BudgetError is a budget the solver cannot meet: Smallest is the planned
// peak with every layer at its most saving mode (an upper bound on the
// least peak any choice reaches; that budget solves).
type BudgetError struct {
	Budget, Smallest int64
}

// Error names the budget and the smallest one that works.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("activation budget %d B: too small even with every layer at its most saving mode (recomputed or offloaded); the smallest budget that works with that choice is %d B (planned)", e.Budget, e.Smallest)
}

// choosable are the modes ModeBudget weighs against Keep.
var choosable = []Mode{SelectiveRecompute, Recompute, Offloaded}

// Solve measures every layer under every mode (1 + 3·n runs of Peak),
// then upgrades the layer whose next mode frees the most bytes per extra
// second until the estimated peak is under Bytes, runs Peak on the choice
// and keeps upgrading while the measured peak is over (and then moves
// offloaded layers to Recompute, see tighten). It returns the
// decisions and the measured peak of the choice, or a *BudgetError.
func (b *ModeBudget) Solve() ([]Decision, int64, error) {
	n := len(b.FLOPs)
	if n == 0 || b.Bytes <= 0 || b.Peak == nil {
		return nil, 0, fmt.Errorf("checkpoint.ModeBudget: %d layers' FLOPs, budget %d B: want at least one layer, a positive budget and a Peak", n, b.Bytes)
	}
	if b.SelectiveFLOPs != nil && len(b.SelectiveFLOPs) != n {
		return nil, 0, fmt.Errorf("checkpoint.ModeBudget: %d layers' FLOPs, %d layers' selective FLOPs: want one entry per layer", n, len(b.SelectiveFLOPs))
	}
	modes := make([]Mode, n)
	base, err := b.Peak(modes)
	if err != nil {
		return nil, 0, err
	}
	freed, err := b.measure(modes, base)
	if err != nil {
		return nil, 0, err
	}
	peak := base
	for peak > b.Bytes {
		est := peak
		if !b.upgrade(modes, freed, &est) && !b.tighten(modes, freed) {
			return nil, 0, &BudgetError{Budget: b.Bytes, Smallest: peak}
		}
		for est > b.Bytes && b.upgrade(modes, freed, &est) {
		}
		if peak, err = b.Peak(modes); err != nil {
			return nil, 0, err
		}
	}
	return b.decisions(modes, freed), peak, nil
}

// measure returns freed[i][m]: base less the peak with layer i alone in
// mode m (Keep frees nothing).
func (b *ModeBudget) measure(modes []Mode, base int64) ([][4]int64, error) {
	freed := make([][4]int64, len(modes))
	for i := range modes {
		for _, m := range choosable {
			modes[i] = m
			p, err := b.Peak(modes)
			if err != nil {
				return nil, err
			}
			freed[i][m] = max(base-p, 0)
		}
		modes[i] = Keep
	}
	return freed, nil
}

// extra is the estimated extra seconds of layer i in mode m freeing f.
func (b *ModeBudget) extra(i int, m Mode, f [4]int64) float64 {
	r := b.Rates
	switch m {
	case SelectiveRecompute:
		var fl float64
		if b.SelectiveFLOPs != nil {
			fl = float64(b.SelectiveFLOPs[i])
		}
		return fl/r.FLOPS + float64(f[m])/r.Memory
	case Recompute:
		return float64(b.FLOPs[i])/r.FLOPS + float64(f[SelectiveRecompute])/r.Memory
	case Offloaded:
		return 2 * float64(f[m]) / r.Copy
	}
	return 0
}

// upgrade moves the one layer whose move to a mode freeing more frees the
// most bytes per extra second, lowering *est by the bytes; false when no
// layer can free more.
func (b *ModeBudget) upgrade(modes []Mode, freed [][4]int64, est *int64) bool {
	bi, bm, best := -1, Keep, -1.0
	for i, cur := range modes {
		for _, m := range choosable {
			gain := freed[i][m] - freed[i][cur]
			if gain <= 0 {
				continue
			}
			cost := b.extra(i, m, freed[i]) - b.extra(i, cur, freed[i])
			r := math.Inf(1)
			if cost > 0 {
				r = float64(gain) / cost
			}
			if r > best {
				bi, bm, best = i, m, r
			}
		}
	}
	if bi < 0 {
		return false
	}
	*est -= freed[bi][bm] - freed[bi][modes[bi]]
	modes[bi] = bm
	return true
}

// tighten moves the offloaded layer that costs least more recomputed to
// Recompute: alone the two free as much, but offloaded layers hold their
// prefetch window's bytes in backward, which measuring one layer alone
// does not see. False when no layer is offloaded.
func (b *ModeBudget) tighten(modes []Mode, freed [][4]int64) bool {
	bi, best := -1, math.Inf(1)
	for i, m := range modes {
		if m != Offloaded {
			continue
		}
		if c := b.extra(i, Recompute, freed[i]) - b.extra(i, m, freed[i]); c < best {
			bi, best = i, c
		}
	}
	if bi < 0 {
		return false
	}
	modes[bi] = Recompute
	freed[bi][Offloaded] = 0 // never offloaded again
	return true
}

// decisions describes modes.
func (b *ModeBudget) decisions(modes []Mode, freed [][4]int64) []Decision {
	ds := make([]Decision, len(modes))
	for i, m := range modes {
		most := max(freed[i][SelectiveRecompute], freed[i][Recompute], freed[i][Offloaded])
		ds[i] = Decision{Layer: i, Mode: m, Freed: freed[i][m], Held: most - freed[i][m], Extra: b.extra(i, m, freed[i])}
	}
	return ds
}

// Modes returns the decisions' modes, one per layer.
func Modes(ds []Decision) []Mode {
	ms := make([]Mode, len(ds))
	for i, d := range ds {
		ms[i] = d.Mode
	}
	return ms
}
