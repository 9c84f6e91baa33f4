package run

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/headroom-ml/headroom/data"
	"github.com/headroom-ml/headroom/train"
)

// registerCorpus registers --corpus-slice.
func (c *Config) registerCorpus(fs *flag.FlagSet) {
	fs.StringVar(&c.CorpusSlice, "corpus-slice", "0:1", "lo:hi, fractions with 0 ≤ lo < hi ≤ 1: train and validate on bytes [⌊lo·n⌋, ⌊hi·n⌋) of the n-byte corpus (the default corpus, Go 1.26's source tree sorted by path: 0:0.8 ends in runtime/pprof), e.g. to fine-tune an --init model on a part it did not see")
}

// sliceBounds returns --corpus-slice's fractions, or an error naming
// what is wrong with it.
func (c *Config) sliceBounds() (lo, hi float64, err error) {
	a, b, ok := strings.Cut(c.CorpusSlice, ":")
	if ok {
		lo, err = strconv.ParseFloat(strings.TrimSpace(a), 64)
	}
	if ok && err == nil {
		hi, err = strconv.ParseFloat(strings.TrimSpace(b), 64)
	}
	if !ok || err != nil || !(lo >= 0 && lo < hi && hi <= 1) {
		return 0, 0, train.Usagef("--corpus-slice %s: want lo:hi, two fractions with 0 ≤ lo < hi ≤ 1 (such as 0:0.8)", c.CorpusSlice)
	}
	return lo, hi, nil
}

// checkCorpus refuses a --corpus-slice that is not lo:hi.
func (c *Config) checkCorpus() error {
	_, _, err := c.sliceBounds()
	return err
}

// corpusSlice returns the part of corpus --corpus-slice names and the
// run's description of it.
func (c *Config) corpusSlice(corpus *data.Text) (*data.Text, string) {
	lo, hi, _ := c.sliceBounds() // checked by Parse
	if lo == 0 && hi == 1 {
		return corpus, fmt.Sprintf("%d-byte corpus", corpus.Len())
	}
	part := corpus.Slice(lo, hi)
	return part, fmt.Sprintf("%d bytes (--corpus-slice %s) of a %d-byte corpus", part.Len(), c.CorpusSlice, corpus.Len())
}
