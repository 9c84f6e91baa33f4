package train

import (
	"errors"
	"strings"
	"testing"
)

// TestFitsHost: host buffers beyond the machine's memory are a usage error
// naming the flag; small ones pass.
func TestFitsHost(t *testing.T) {
	if err := FitsHost("batch", 8, 1<<20); err != nil {
		t.Errorf("FitsHost(1 MiB) = %v", err)
	}
	var ue *UsageError
	if total := hostMemory(); total > 0 {
		err := FitsHost("batch", 9, 2*float64(total))
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--batch 9: its host buffers need") {
			t.Errorf("FitsHost(twice the machine's %d bytes) = %v, want a usage error naming --batch 9", total, err)
		}
	}
}
