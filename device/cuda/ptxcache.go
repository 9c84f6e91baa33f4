package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// PTX cache on disk: NVRTC takes seconds for a large unit (elementwise.cu
// instantiates every dtype pair), so compiled PTX is kept in a folder,
// named by a hash of the unit, every header, the target and NVRTC's
// version: HEADROOM_CUDA_CACHE, or headroom/ptx under os.UserCacheDir;
// HEADROOM_CUDA_CACHE=off disables it. Each file ends with a line holding
// the SHA-256 of the PTX before it, so a truncated or altered file is
// detected and compiled again rather than loaded. A failure to read or
// write the cache only costs the compile.

// cacheDir returns the cache folder, or "" when there is none.
func cacheDir() string {
	d := os.Getenv("HEADROOM_CUDA_CACHE")
	if d == "off" {
		return ""
	}
	if d == "" {
		u, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		d = filepath.Join(u, "headroom", "ptx")
	}
	return d
}

// cacheKey names a compilation.
func (m *modules) cacheKey(u string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00nvrtc %d.%d\x00", u, m.arch, m.rtc.Major, m.rtc.Minor)
	h.Write(m.srcs[u])
	names := make([]string, 0, len(m.hdrs))
	for n := range m.hdrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "\x00%s\x00", n)
		h.Write(m.hdrs[n])
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// cachedPTX returns the cached PTX of unit u, or nil.
func (m *modules) cachedPTX(u string) []byte {
	d := cacheDir()
	if d == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(d, m.cacheKey(u)+".ptx"))
	if err != nil {
		return nil
	}
	return checkedPTX(b)
}

// ptxTrailer starts the checksum line that ends a cached PTX file.
const ptxTrailer = "\n// headroom sha256 "

// sealPTX returns ptx followed by its checksum line.
func sealPTX(ptx []byte) []byte {
	sum := sha256.Sum256(ptx)
	return append(append(append([]byte(nil), ptx...), ptxTrailer...), hex.EncodeToString(sum[:])+"\n"...)
}

// checkedPTX returns the PTX of a sealed file, or nil when its checksum
// line is missing or does not match.
func checkedPTX(b []byte) []byte {
	i := bytes.LastIndex(b, []byte(ptxTrailer))
	if i < 0 {
		return nil
	}
	ptx, sum := b[:i], sha256.Sum256(b[:i])
	if string(b[i+len(ptxTrailer):]) != hex.EncodeToString(sum[:])+"\n" {
		return nil
	}
	return ptx
}

// storePTX writes unit u's PTX to the cache (atomically: a temporary file
// renamed into place).
func (m *modules) storePTX(u string, ptx []byte) {
	d := cacheDir()
	if d == "" || os.MkdirAll(d, 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(d, "tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(sealPTX(ptx))
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(d, m.cacheKey(u)+".ptx")) != nil {
		os.Remove(f.Name())
	}
}
