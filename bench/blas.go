package bench

import (
	"fmt"
	"path/filepath"
	"strings"
)

// BLAS is the BLAS library a PyTorch process loaded, as scripts/
// bench_torch.py reports it: the resolved paths of the BLAS-like shared
// objects mapped into the process after a matmul (its /proc/self/maps).
type BLAS struct {
	// Name is "OpenBLAS", "MKL", "BLIS", "ATLAS", "reference BLAS
	// (netlib)" or "none found" (a torch with its BLAS linked in).
	Name string
	// Path is the library the name comes from ("" for none found).
	Path string
	// Reference is true for netlib's reference BLAS, tens of times slower
	// than an optimized one: a comparison against it flatters headroom.
	Reference bool
}

// blasKinds are the optimized BLAS libraries, by a substring of the
// file's base name, first match wins.
var blasKinds = []struct{ key, name string }{
	{"openblas", "OpenBLAS"}, {"mkl", "MKL"}, {"blis", "BLIS"}, {"atlas", "ATLAS"},
}

// ClassifyBLAS says which BLAS the paths are. An optimized library among
// them wins; otherwise a libblas.so (Debian's alternative resolved to
// …/blas/libblas.so.3, netlib's reference implementation) is the
// reference BLAS. Debian's OpenBLAS alternative is a libblas.so.3 too, but
// in a folder named openblas*: the folder counts when no file's name does
// (the file named is the library itself where one is mapped).
func ClassifyBLAS(paths []string) BLAS {
	for _, name := range []func(string) string{filepath.Base, func(p string) string { return filepath.Base(filepath.Dir(p)) }} {
		for _, k := range blasKinds {
			for _, p := range paths {
				if strings.Contains(name(strings.ToLower(p)), k.key) {
					return BLAS{Name: k.name, Path: p}
				}
			}
		}
	}
	for _, p := range paths {
		if strings.HasPrefix(strings.ToLower(filepath.Base(p)), "libblas.so") {
			return BLAS{Name: "reference BLAS (netlib)", Path: p, Reference: true}
		}
	}
	return BLAS{Name: "none found"}
}

// String is the name and the path.
func (b BLAS) String() string {
	if b.Path == "" {
		return b.Name
	}
	return b.Name + " (" + b.Path + ")"
}

// ReferenceBLASError is the refusal to compare with a PyTorch that runs on
// the reference BLAS.
type ReferenceBLASError struct{ BLAS BLAS }

func (e *ReferenceBLASError) Error() string {
	return fmt.Sprintf("bench: --torch: PyTorch loaded %s, the unoptimized reference BLAS: its matmuls run tens of times slower "+
		"than an optimized BLAS's, so the comparison would flatter headroom; install OpenBLAS (apt-get install libopenblas0-pthread) "+
		"or point the libblas.so.3 alternative at an optimized BLAS, then run again", e.BLAS)
}
