// dropout.cu: Dropout with the counter-based Philox4x32-10 generator of
// internal/kernels/philox.go, bit for bit.
//
// Element i (row-major over dst's shape) draws the word at stream position
// pos = offset + i: word pos mod 4 of Philox4x32-10(counter (pos/4 low,
// pos/4 high, 0, 0), key (seed low, seed high)). Its top 24 bits, times
// 2^-24, give a float u in [0, 1); the element is kept when u ≥ p (compared
// in double) and becomes src·scale, scale = 1/(1−p), computed in double and
// rounded to the compute type (float for F32, F16, BF16) before the store.
// Each thread computes one Philox block and its (up to) four elements.
#include "common.cuh"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

struct Words { unsigned int w[4]; };

// philox4x32_10 is kernels.Philox4x32: ten rounds, the key bumped before
// every round after the first.
__device__ inline Words philox4x32_10(unsigned int c0, unsigned int c1, unsigned int c2, unsigned int c3,
                                      unsigned int k0, unsigned int k1) {
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    unsigned long long p0 = (unsigned long long)PHILOX_M0 * c0;
    unsigned long long p1 = (unsigned long long)PHILOX_M1 * c2;
    unsigned int hi0 = (unsigned int)(p0 >> 32), lo0 = (unsigned int)p0;
    unsigned int hi1 = (unsigned int)(p1 >> 32), lo1 = (unsigned int)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  Words out = {{c0, c1, c2, c3}};
  return out;
}

__device__ inline double keep_scaled(double x, double scale) { return x * scale; }
__device__ inline float keep_scaled(float x, double scale) { return (float)((double)x * scale); }

template <class T>
__device__ void dropout_impl(T* dst, const Layout& dl, const T* src, const Layout& sl, long long n, double p,
                             double scale, unsigned long long seed, unsigned long long offset) {
  typedef typename Elem<T>::acc A;
  if (n <= 0) return;
  unsigned long long first = offset / 4, last = (offset + (unsigned long long)n - 1) / 4;
  long long blocks = (long long)(last - first + 1);
  GRID_STRIDE(j, blocks) {
    unsigned long long b = first + (unsigned long long)j;
    Words r = philox4x32_10((unsigned int)b, (unsigned int)(b >> 32), 0u, 0u, (unsigned int)seed,
                            (unsigned int)(seed >> 32));
    for (int w = 0; w < 4; w++) {
      unsigned long long pos = 4 * b + (unsigned long long)w;
      if (pos < offset || pos - offset >= (unsigned long long)n) continue;
      long long i = (long long)(pos - offset);
      float u = (float)(r.w[w] >> 8) * 5.9604644775390625e-08f;  // 2^-24
      A v = (A)0;
      if ((double)u >= p) v = keep_scaled(Elem<T>::load(src, layout_offset(sl, i)), scale);
      Elem<T>::store(dst, layout_offset(dl, i), v);
    }
  }
}

#define DROPOUT(sfx, T)                                                                                  \
  extern "C" __global__ void dropout_##sfx(T* dst, Layout dl, const T* src, Layout sl, long long n, double p, \
                                            double scale, unsigned long long seed, unsigned long long offset) { \
    dropout_impl<T>(dst, dl, src, sl, n, p, scale, seed, offset);                                        \
  }
FOR_FLOAT_TYPES(DROPOUT)
