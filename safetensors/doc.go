// Package safetensors reads and writes the safetensors file format
// (github.com/huggingface/safetensors), in which Hugging Face models are
// shared and in which headroom saves models and training state.
//
// # The format
//
// A file is three parts, with nothing else:
//
//	8 bytes   N, the header's length, an unsigned little-endian integer
//	N bytes   the header: UTF-8 JSON, padded with spaces
//	the rest  the tensors' elements, one tensor after another
//
// The header is one JSON object. Its key "__metadata__", optional, holds
// an object of free-form strings. Every other key is a tensor's name, and
// its value says where the tensor is:
//
//	{"__metadata__":{"format":"pt"},
//	 "fc.weight":{"dtype":"F32","shape":[4,3],"data_offsets":[0,48]},
//	 "fc.bias":{"dtype":"F32","shape":[4],"data_offsets":[48,64]}}
//
// data_offsets are [begin, end) byte offsets into the part after the header.
// Elements are little-endian and row-major; a tensor of shape [] is a
// scalar (one element), and one with a zero dimension is empty (begin =
// end). Taken in offset order, the tensors must cover the data part exactly:
// no gaps, no overlaps, nothing after the last. The header may be at most
// MaxHeaderSize (100,000,000) bytes.
//
// # Writing
//
// Encode and WriteFile write the header as compact JSON padded with spaces
// to a multiple of 8 bytes, so the data part starts 8-byte aligned, then
// the tensors in File.Names order. File.Sort orders the names as the
// reference writer (Python's save_file) does: most aligned element type
// first, then by name. Every tensor then starts at a multiple of its
// element size, and the file is byte for byte what the reference writer
// makes from the same tensors and metadata, except when the metadata has
// several keys (the reference writes them in hash order, Encode sorts them)
// or is an empty dict (the reference writes "__metadata__":{}, Encode
// leaves out empty metadata, as the reference does for None).
// WriteFile is atomic: a failed write leaves the old file as it was.
//
// # Checksums
//
// A file may carry a CRC-32C (Castagnoli) checksum of each tensor and of
// its metadata, as metadata strings, so that Python's safetensors reads it
// as any other file (its metadata stays a flat map of strings):
//
//	"headroom.crc32c.<tensor name>":  the CRC-32C of the tensor's type and
//	                                  shape as text ("F32[4,3]"), then its data
//	"headroom.crc32c.__metadata__":   the CRC-32C of the other metadata, each
//	                                  key and value prefixed by its length
//	                                  (see MetadataSum)
//
// each value 8 lower-case hexadecimal digits. File.SetChecksums computes
// them (one pass over each tensor's Data, no copy), Encode writes them, and
// Decode verifies them before it returns: a mismatch is a *ChecksumError
// naming the tensor (ReadFile adds the path). ReadMetadata reads the
// metadata from the header alone and verifies only its checksum. A file
// has checksums for
// everything or for nothing: a partial set (a tensor or the metadata
// without one, or one for a tensor the file lacks) is an error, because a
// tool that rewrote part of a file must not leave the rest looking
// verified. A file without checksums — written by Python, by another tool,
// or by headroom before they were added — decodes unverified, as before.
// With them, every single-byte change anywhere in a file fails to decode
// (tested byte by byte), except a padding space that becomes other JSON
// white space, which alters nothing.
//
// # Element types
//
// Tensor.Kind is the format's name of the element type. The project's seven
// dtypes map one to one:
//
//	dtype.F64  F64    dtype.I8   I8
//	dtype.F32  F32    dtype.I32  I32
//	dtype.F16  F16    dtype.I64  I64
//	dtype.BF16 BF16
//
// The format's other types (BOOL, U8, I16, U16, U32, U64, C64, the 8-bit
// floats F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, and the sub-byte
// F4, F6_E2M3, F6_E3M2) are read and written as raw bytes with
// Tensor.DType left dtype.Invalid: a program can carry them through, and
// anything that turns them into project tensors rejects them by their Kind.
// Sub-byte types pack elements into bytes, so such a tensor must have a
// whole number of bytes.
//
// # Validation
//
// Decode follows the reference implementation's rules (header size limit,
// UTF-8, JSON shape, known types, sizes computed without overflow, exact
// coverage) and is stricter in one way: a key repeated in the header is an
// error, where the reference silently keeps the last; and it verifies
// checksums (above). Decode never panics on any input; a fuzz test checks
// that, and that whatever it accepts encodes and decodes back to the same
// File.
//
// # Fuzzing
//
// The project's readers each have a fuzz target: FuzzDecode and
// FuzzReadMetadata here, FuzzLoad (quant), FuzzLoadSnapshot and
// FuzzReadReport (train), FuzzReadCIFAR,
// FuzzLoadText, FuzzTextSplit and FuzzReadIDX (data), FuzzReadTimeline
// (device) and FuzzReadResult (bench).
// Plain `go test` runs their seeds as tests; one fuzzes with
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 60s ./safetensors/
//
// -fuzz takes a pattern that must match one target; -run '^$' skips the
// other tests. -fuzztime bounds the run (60s, or 100000x for a number of
// inputs); -parallel sets the workers (default GOMAXPROCS: on a shared
// machine, -parallel 1 leaves the other cores alone). -fuzzminimizetime
// bounds the time spent shrinking each input that found new code (default
// 60s); the shrinker tries removing every run of bytes, which is quadratic
// in the input's length, and no input is fuzzed while it runs. A target
// whose input is a whole file of a few KB and whose run takes milliseconds
// therefore spends all its time shrinking: quant's FuzzLoad once did 29 runs
// in 60 s and then none. The file loaders' targets take a small edit of a
// real file instead (bytes [at, end) replaced by a patch; any file is
// reachable), which shrinks in moments; for one with large inputs pass
// -fuzzminimizetime 5s (or 0 to skip shrinking). The loaders' targets also
// fuzz the file without its checksums, so the fuzzer reaches the checks
// behind them.
//
// Targets that write a file each run (FuzzLoad, FuzzLoadSnapshot, FuzzReadMetadata,
// FuzzReadCIFAR, FuzzLoadText) are bound by the file system: on an ext4
// /tmp mounted with discard, rewriting a small file took 2.7-5.5 ms against
// 0.25 ms on tmpfs, so run them with TMPDIR=/dev/shm where there is one.
// With Go 1.26, a -fuzztime given as a duration can end in a spurious
// "context deadline exceeded" failure with no failing input
// (go.dev/issue/75804, fixed in Go 1.27); a count such as -fuzztime
// 200000x avoids it. A real failure is saved under testdata/fuzz/<target>/,
// where plain `go test` replays it; commit it with the fix.
package safetensors
