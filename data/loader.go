package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// LoaderConfig configures a Loader. The zero value gives batches of one
// sample in file order, scaled to [0, 1], with no augmentation.
type LoaderConfig struct {
	// Batch is the number of samples per batch; 0 means 1 (as PyTorch's
	// DataLoader).
	Batch int
	// Shuffle draws a new order of the samples at the start of every epoch;
	// false keeps the set's order.
	Shuffle bool
	// Seed seeds the shuffling and augmentation generators.
	Seed uint64
	// DropLast ends an epoch before a last batch smaller than Batch; false
	// returns that partial batch.
	DropLast bool
	// Mean and Std normalise each channel after scaling to [0, 1]:
	// x = (p/255 − Mean[c]) / Std[c], in float32. Each is empty (Mean 0,
	// Std 1) or has one value per channel.
	Mean, Std []float32
	// Crop, when positive, pads each image with Crop zero pixels on every
	// side and takes a random H×W window of the padded image (torchvision's
	// RandomCrop(size, padding=Crop)): the window's top-left corner (dy, dx)
	// is uniform over [0, 2·Crop]², and padding pixels are raw 0, so they
	// normalise to −Mean[c]/Std[c]. 0 means no crop.
	Crop int
	// Flip mirrors each image left to right with probability 1/2, after the
	// crop (RandomHorizontalFlip).
	Flip bool
}

// Loader cuts an Images set into batches of float32 pixels and int64
// labels, epoch after epoch. It is deterministic: the same set, config and
// seed give the same batches. Not safe for concurrent use.
//
// Randomness comes from two PCG generators (math/rand/v2) seeded with Seed:
// one shuffles (a Fisher–Yates pass over the identity at the start of each
// epoch), the other augments; per sample, in order, it draws dy, then dx
// (when Crop > 0), then the flip bit (when Flip).
type Loader struct {
	set   *Images
	cfg   LoaderConfig
	lut   []float32 // (C, 256): the normalised value of each raw pixel value per channel
	epoch int       // epochs completed
	pos   int       // samples of the current epoch already returned
	perm  []int     // (N): the current epoch's order
	// order is the shuffling generator; orderStart is its state when the
	// current epoch began (State saves it; SetState replays the shuffle).
	order, orderStart rand.PCG
	aug               rand.PCG
	x                 []float32 // (B, C, H, W)
	y                 []int64   // (B)
}

// NewLoader returns a loader over set, at the start of epoch 0. It checks
// the set (Images.Validate) and the config: Batch and Crop not negative,
// Mean and Std empty or one value per channel, Std positive, and with
// DropLast at least one full batch.
func NewLoader(set *Images, cfg LoaderConfig) (*Loader, error) {
	if err := set.Validate(); err != nil {
		return nil, fmt.Errorf("data.NewLoader: %w", err)
	}
	if cfg.Batch < 0 {
		return nil, fmt.Errorf("data.NewLoader: Batch = %d, want 0 (meaning 1) or more", cfg.Batch)
	}
	if cfg.Batch == 0 {
		cfg.Batch = 1
	}
	if cfg.DropLast && cfg.Batch > set.N {
		return nil, fmt.Errorf("data.NewLoader: DropLast with Batch = %d over a set of %d samples leaves no batch", cfg.Batch, set.N)
	}
	if cfg.Crop < 0 {
		return nil, fmt.Errorf("data.NewLoader: Crop = %d, want 0 (none) or a positive padding", cfg.Crop)
	}
	lut, err := normalisationTable(set.C, cfg.Mean, cfg.Std)
	if err != nil {
		return nil, err
	}
	cfg.Mean, cfg.Std = nil, nil // the table holds them; the caller keeps its slices
	l := &Loader{
		set:   set,
		cfg:   cfg,
		lut:   lut,
		perm:  make([]int, set.N),
		order: *rand.NewPCG(cfg.Seed, streamLoaderOrder),
		aug:   *rand.NewPCG(cfg.Seed, streamLoaderAugment),
		x:     make([]float32, cfg.Batch*set.C*set.H*set.W),
		y:     make([]int64, cfg.Batch),
	}
	l.startEpoch()
	return l, nil
}

// normalisationTable returns (C, 256) float32 values (p/255 − mean)/std.
func normalisationTable(c int, mean, std []float32) ([]float32, error) {
	if len(mean) != 0 && len(mean) != c {
		return nil, fmt.Errorf("data.NewLoader: %d Mean values for %d channels, want 0 or %d", len(mean), c, c)
	}
	if len(std) != 0 && len(std) != c {
		return nil, fmt.Errorf("data.NewLoader: %d Std values for %d channels, want 0 or %d", len(std), c, c)
	}
	lut := make([]float32, c*256)
	for ch := range c {
		m, s := float32(0), float32(1)
		if len(mean) > 0 {
			m = mean[ch]
		}
		if len(std) > 0 {
			s = std[ch]
		}
		if math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) || !(s > 0) || math.IsInf(float64(s), 0) {
			return nil, fmt.Errorf("data.NewLoader: channel %d has Mean %v and Std %v, want a finite mean and a finite positive std", ch, m, s)
		}
		for p := range 256 {
			lut[ch*256+p] = (float32(p)/255 - m) / s
		}
	}
	return lut, nil
}

// startEpoch records the shuffling generator's state and draws the epoch's
// order.
func (l *Loader) startEpoch() {
	l.orderStart = l.order
	for i := range l.perm {
		l.perm[i] = i
	}
	if l.cfg.Shuffle {
		for i := len(l.perm) - 1; i > 0; i-- {
			j := int(below(&l.order, uint64(i+1)))
			l.perm[i], l.perm[j] = l.perm[j], l.perm[i]
		}
	}
}

// Next returns the next batch of the current epoch: x (B, C, H, W) and
// labels y (B), B being Batch or, for a last partial batch without
// DropLast, fewer. At the end of the epoch it returns ok = false and
// nothing else; the following call starts the next epoch, reshuffled.
//
// x and y are the loader's own buffers: the next call to Next overwrites
// them. Copy what must outlive it (Scope.FromFloat32s and FromInt64s copy).
func (l *Loader) Next() (x []float32, y []int64, ok bool) {
	n, b := l.set.N, l.cfg.Batch
	rem := n - l.pos
	if rem == 0 || (l.cfg.DropLast && rem < b) {
		l.epoch++
		l.pos = 0
		l.startEpoch()
		return nil, nil, false
	}
	k := min(b, rem)
	d := l.set.C * l.set.H * l.set.W
	x, y = l.x[:k*d], l.y[:k]
	for i := range k {
		idx := l.perm[l.pos+i]
		l.sample(x[i*d:(i+1)*d], l.set.Pixels[idx*d:(idx+1)*d])
		y[i] = int64(l.set.Labels[idx])
	}
	l.pos += k
	return x, y, true
}

// sample writes one normalised, augmented image (C, H, W) into dst.
func (l *Loader) sample(dst []float32, src []uint8) {
	if l.cfg.Crop == 0 && !l.cfg.Flip {
		hw := l.set.H * l.set.W
		for ch := range l.set.C {
			t := (*[256]float32)(l.lut[ch*256:])
			out := dst[ch*hw : (ch+1)*hw]
			for i, p := range src[ch*hw : (ch+1)*hw] {
				out[i] = t[p]
			}
		}
		return
	}
	dy, dx, flip := l.cfg.Crop, l.cfg.Crop, false // no shift: window at the padding's offset
	if l.cfg.Crop > 0 {
		side := uint64(2*l.cfg.Crop + 1)
		dy = int(below(&l.aug, side))
		dx = int(below(&l.aug, side))
	}
	if l.cfg.Flip {
		flip = l.aug.Uint64()>>63 == 1
	}
	augment(dst, src, l.lut, l.set.C, l.set.H, l.set.W, l.cfg.Crop, dy, dx, flip)
}

// augment writes the image src (C, H, W) into dst, cropped and flipped: the
// output pixel (c, y, x) is the padded image's pixel (c, y+dy, x'+dx), with
// x' = W−1−x when flipped and x otherwise; the padded image is src with pad
// zero pixels on every side. Values go through the normalisation table.
func augment(dst []float32, src []uint8, lut []float32, c, h, w, pad, dy, dx int, flip bool) {
	for ch := range c {
		t := (*[256]float32)(lut[ch*256:])
		plane := src[ch*h*w : (ch+1)*h*w]
		out := dst[ch*h*w : (ch+1)*h*w]
		for y := range h {
			sy := y + dy - pad
			row := out[y*w : (y+1)*w]
			if sy < 0 || sy >= h {
				for x := range row {
					row[x] = t[0]
				}
				continue
			}
			in := plane[sy*w : (sy+1)*w]
			for x := range row {
				xs := x
				if flip {
					xs = w - 1 - x
				}
				sx := xs + dx - pad
				if sx < 0 || sx >= w {
					row[x] = t[0]
				} else {
					row[x] = t[in[sx]]
				}
			}
		}
	}
}

// Epoch returns the number of epochs completed: the index of the epoch that
// Next is drawing from, counting from 0.
func (l *Loader) Epoch() int { return l.epoch }

// Batches returns the number of batches in an epoch: ⌈N/Batch⌉, or
// ⌊N/Batch⌋ with DropLast.
func (l *Loader) Batches() int {
	if l.cfg.DropLast {
		return l.set.N / l.cfg.Batch
	}
	return (l.set.N + l.cfg.Batch - 1) / l.cfg.Batch
}
