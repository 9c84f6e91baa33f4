package cpu

import "testing"

func TestPageRange(t *testing.T) {
	const page = 4096
	tests := []struct{ off, n, lo, hi int64 }{
		{0, page, 0, page},
		{0, page - 1, 0, 0},     // less than a page: nothing
		{512, page, page, page}, // crosses a boundary, holds no whole page
		{512, 2*page - 512, page, page * 2},
		{page - 512, 3 * page, page, 3 * page},
		{3 * page, 5 * page, 3 * page, 8 * page},
	}
	for _, tt := range tests {
		lo, hi := pageRange(tt.off, tt.n, page)
		if lo != tt.lo || hi != tt.hi {
			t.Errorf("pageRange(%d, %d) = [%d, %d), want [%d, %d)", tt.off, tt.n, lo, hi, tt.lo, tt.hi)
		}
	}
}
