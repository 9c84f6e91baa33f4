package device

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var units = []struct {
	name string
	n    int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// FormatBytes renders n bytes with a binary unit: "512 B", "1.50 KiB",
// "64.00 MiB", "2.25 GiB".
func FormatBytes(n int64) string {
	a := n
	if a < 0 {
		a = -a
	}
	for _, u := range units {
		if a >= u.n {
			return fmt.Sprintf("%.2f %s", float64(n)/float64(u.n), u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// ParseBytes reads a size such as "24GiB", "1.5 GiB", "512MiB", "80GB",
// "4096" or "64k". Binary units (KiB, MiB, GiB, TiB, and the bare letters
// K, M, G, T) are powers of 1024; decimal ones (KB, MB, GB, TB) powers of 1000.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
		"g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("device: cannot read size %q (want a number and a unit, e.g. 24GiB, 512MiB, 80GB)", s)
	}
	b := v * mult
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("device: size %q is too large", s)
	}
	return int64(math.Round(b)), nil
}
