package cpu

// pageRange returns the pages of size page that lie wholly inside the n
// bytes at off, as the byte range [lo, hi) (empty when lo >= hi).
func pageRange(off, n, page int64) (lo, hi int64) {
	lo = (off + page - 1) / page * page
	hi = (off + n) / page * page
	return lo, hi
}
