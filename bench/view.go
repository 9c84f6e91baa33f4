package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/headroom-ml/headroom/train"
)

// writeViews writes the memory page (device.Timeline.WriteHTML) of each
// row's measured step into dir as view-MODEL-TECHNIQUE.html, records its
// name in the row's View and returns the paths written. A page holds about
// 10 bytes per event (see internal/memview).
func (r *Result) writeViews(dir string) ([]string, error) {
	var paths []string
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.Timeline == nil || len(row.Timeline.Events) == 0 {
			continue
		}
		name := "view-" + fileSafe(row.Model) + "-" + fileSafe(row.Technique) + ".html"
		path := filepath.Join(dir, name)
		if err := train.WriteAtomic(path, row.Timeline.WriteHTML); err != nil {
			return nil, fmt.Errorf("bench: %s/%s: %w", row.Model, row.Technique, err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		row.View = name
		paths = append(paths, path)
	}
	return paths, nil
}

// fileSafe keeps letters, digits, '-', '_' and '.' of s, replacing the
// rest with '_'.
func fileSafe(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			return c
		}
		return '_'
	}, s)
}
