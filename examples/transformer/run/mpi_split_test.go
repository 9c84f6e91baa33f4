//go:build !mpi

package run

import (
	"bytes"
	"strings"
	"testing"
)

// TestSplitMPIWithoutBuild: --mpi with --tp and --pp is accepted as a
// combination (no longer refused by the split checks), and a build
// without the mpi tag says how to get one, before any work.
func TestSplitMPIWithoutBuild(t *testing.T) {
	args := []string{"--mpi", "--ranks", "4", "--tp", "2", "--pp", "2", "--tie-embeddings=false", "--clip", "0", "--heads", "2", "--layers", "2"}
	_, err := Parse(args, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-tags mpi") || strings.Contains(err.Error(), "not available") {
		t.Errorf("Parse(%q) = %v, want the error naming -tags mpi", args, err)
	}
}
