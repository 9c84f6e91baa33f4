//go:build amd64 && !noasm

package kernels

// im2colPermAVX512 is im2colPerm in assembly (conv_perm_amd64.s): ld and
// xs in elements, nbs the outputs per sample (t.nbs); every word read or
// written lies inside the caller's slices (the loads and stores are
// masked).
//
//go:noescape
func im2colPermAVX512(dst *uint16, ld int, x *uint16, xs, ns, nbs, t0, t1 int, t *convPerm)

// col2imPermAVX512 is col2imPerm in assembly (conv_perm_amd64.s): ld in
// elements, quarters ⌈hw/16⌉, wide 1 when a tile row has more than 32
// columns (else 0); every float read or written lies inside the caller's
// slices (the loads and stores are masked).
//
//go:noescape
func col2imPermAVX512(dx, col *float32, ld, rs, quarters, wide int, t *convUnperm)

// im2colPermF32AVX512 is im2colPermF in assembly (conv_perm_amd64.s), as
// im2colPermAVX512 for float32 tiles.
//
//go:noescape
func im2colPermF32AVX512(dst *float32, ld int, x *float32, xs, ns, nbs, t0, t1 int, t *convUnperm)
