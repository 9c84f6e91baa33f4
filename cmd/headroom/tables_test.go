package main

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/headroom-ml/headroom/device"
)

// Reading the tables the commands print, to check that what they say
// adds up.

// tableRows returns the cells of the table lines in text: lines whose
// first cell is a rank ("0", "0–3"), split on runs of spaces, and the
// rows of a Markdown table after its header, split on "|".
func tableRows(text string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(text, "\n") {
		var cells []string
		switch {
		case strings.HasPrefix(line, "| technique"), strings.HasPrefix(line, "|---"):
		case strings.HasPrefix(line, "|"):
			cells = strings.Split(strings.Trim(line, "|"), "|")
		case line != "" && unicode.IsDigit(rune(line[0])):
			cells = regexp.MustCompile(`\s{2,}`).Split(line, -1)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) > 0 {
			rows = append(rows, cells)
		}
	}
	return rows
}

// sum is a printed total and the sum of printed parts, with how far
// apart rounding to the printed digits lets them be.
type sum struct{ total, parts, slack float64 }

func (s sum) fits() bool { return math.Abs(s.total-s.parts) <= s.slack }

// sums reads, in each row, the total in cell total and the parts in the
// cells first…last.
func sums(rows [][]string, total, first, last int) []sum {
	var out []sum
	for _, r := range rows {
		var s sum
		s.total, s.slack = printed(r[total])
		for _, c := range r[first : last+1] {
			v, slack := printed(c)
			s.parts, s.slack = s.parts+v, s.slack+slack
		}
		out = append(out, s)
	}
	return out
}

// printed reads a size as FormatBytes prints it and how much its
// rounding to two decimals (or to a byte) may have changed it.
func printed(cell string) (float64, float64) {
	n, err := device.ParseBytes(cell)
	if err != nil {
		return math.NaN(), 0
	}
	for _, u := range []struct {
		name string
		size float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(cell, u.name) {
			return float64(n), 0.005 * u.size
		}
	}
	return float64(n), 0.5
}

// checkSums checks that in every row the cells first…last add up to the
// cell total.
func checkSums(t *testing.T, what string, rows [][]string, total, first, last int) {
	t.Helper()
	if len(rows) == 0 {
		t.Errorf("%s: no rows", what)
	}
	for i, s := range sums(rows, total, first, last) {
		if !s.fits() {
			t.Errorf("%s, row %q: the tags add up to %.0f bytes, the peak printed is %.0f (rounding allows %.0f)", what, rows[i], s.parts, s.total, s.slack)
		}
	}
}
