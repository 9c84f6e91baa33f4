// 2-D pooling over contiguous (N, C, H, W) → (N, C, OH, OW), and the
// gradients, in the cpu's arithmetic (internal/kernels/pool.go).
//
// pool_max_T / pool_avg_T / pool_adaptive_avg_T: one thread per output
// element. The maximum compares in the compute dtype (NaN wins, the first
// NaN or the first of equal maxima is kept); a window wholly in the padding
// gives −Inf. The averages sum in double and divide in double.
//
// pool_max_grad_T / pool_avg_grad_T / pool_adaptive_avg_grad_T: one thread
// per dx element (no atomics). It scans the windows that cover its element
// in the cpu's order (output row, then column, ascending) and adds, in the
// compute dtype, each window's dy (max: only where the window's first
// maximum, recomputed from x, is this element; average: dy/divisor).
// Results are the cpu's bit for bit.
#include "common.cuh"

struct PoolP {
  long long planes, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
  int countPad;
};

// pool_range is convRange of internal/kernels/conv.go: the taps [lo, hi)
// of a window starting at off (stride step over size) inside the input.
static __device__ void pool_range(long long off, long long step, long long size, long long n,
                                  long long* lo, long long* hi) {
  long long l = 0, h = 0;
  if (off < 0) l = (-off + step - 1) / step;
  long long last = size - 1 - off;
  if (last >= 0) {
    h = last / step + 1;
    if (h > n) h = n;
  }
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

// pool_max_at returns the index in plane of the first maximum of window
// (oy, ox), -1 when it lies wholly in the padding.
template <class T>
__device__ long long pool_max_at(const PoolP& p, const T* plane, long long oy, long long ox) {
  typedef typename Elem<T>::acc A;
  long long h0 = oy * p.sh - p.ph, w0 = ox * p.sw - p.pw, rlo, rhi, slo, shi;
  pool_range(h0, p.dh, p.h, p.kh, &rlo, &rhi);
  pool_range(w0, p.dw, p.w, p.kw, &slo, &shi);
  A best = 0;
  long long at = -1;
  for (long long r = rlo; r < rhi; r++) {
    long long row = (h0 + r * p.dh) * p.w;
    for (long long s = slo; s < shi; s++) {
      long long i = row + w0 + s * p.dw;
      A v = Elem<T>::load(plane, i);
      if (at < 0 || v > best || (v != v && best == best)) {
        best = v;
        at = i;
      }
    }
  }
  return at;
}

template <class T>
__device__ void pool_max_impl(T* y, const T* x, PoolP p) {
  typedef typename Elem<T>::acc A;
  long long ohw = p.oh * p.ow, hw = p.h * p.w;
  GRID_STRIDE(e, p.planes * ohw) {
    long long nc = e / ohw, o = e % ohw;
    const T* plane = x + nc * hw;
    long long i = pool_max_at<T>(p, plane, o / p.ow, o % p.ow);
    A v = i >= 0 ? Elem<T>::load(plane, i) : (A)__longlong_as_double(0xfff0000000000000LL);
    Elem<T>::store(y, e, v);
  }
}

// pool_tap reports whether the window of output o covers input i along
// one axis, and at which tap: (i + pad − o·stride) / dil, a whole number
// in [0, k).
static __device__ bool pool_tap(long long i, long long o, long long stride, long long pad, long long dil,
                                long long k, long long* tap) {
  long long t = i + pad - o * stride;
  if (t < 0 || t % dil != 0) return false;
  t /= dil;
  if (t >= k) return false;
  *tap = t;
  return true;
}

// pool_out_range is the output range [lo, hi) along one axis whose windows
// can reach input i: o·stride − pad ≤ i and o·stride − pad + (k−1)·dil ≥ i.
static __device__ void pool_out_range(long long i, long long stride, long long pad, long long dil, long long k,
                                      long long n, long long* lo, long long* hi) {
  long long a = i + pad - (k - 1) * dil;  // o·stride ≥ a
  long long l = a <= 0 ? 0 : (a + stride - 1) / stride;
  long long b = i + pad;  // o·stride ≤ b
  long long h = b < 0 ? 0 : b / stride + 1;
  if (h > n) h = n;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

// pool_windows_of calls f(oy, ox) for every output window that has input
// (iy, ix) as a tap, in row-major order (the order the gradients sum in).
template <class F>
__device__ void pool_windows_of(const PoolP& p, long long iy, long long ix, F f) {
  long long ylo, yhi, xlo, xhi, tap;
  pool_out_range(iy, p.sh, p.ph, p.dh, p.kh, p.oh, &ylo, &yhi);
  pool_out_range(ix, p.sw, p.pw, p.dw, p.kw, p.ow, &xlo, &xhi);
  for (long long oy = ylo; oy < yhi; oy++) {
    if (!pool_tap(iy, oy, p.sh, p.ph, p.dh, p.kh, &tap)) continue;
    for (long long ox = xlo; ox < xhi; ox++) {
      if (pool_tap(ix, ox, p.sw, p.pw, p.dw, p.kw, &tap)) f(oy, ox);
    }
  }
}

template <class T>
__device__ void pool_max_grad_impl(T* dx, const T* dy, const T* x, PoolP p) {
  typedef typename Elem<T>::acc A;
  long long ohw = p.oh * p.ow, hw = p.h * p.w;
  GRID_STRIDE(e, p.planes * hw) {
    long long nc = e / hw, q = e % hw, iy = q / p.w, ix = q % p.w;
    const T* plane = x + nc * hw;
    const T* g = dy + nc * ohw;
    A acc = 0;
    pool_windows_of(p, iy, ix, [&](long long oy, long long ox) {
      if (pool_max_at<T>(p, plane, oy, ox) == q) acc += Elem<T>::load(g, oy * p.ow + ox);
    });
    Elem<T>::store(dx, e, acc);
  }
}

// pool_divisor is the divisor of window (oy, ox), and its taps.
static __device__ long long pool_divisor(const PoolP& p, long long oy, long long ox, long long* h0, long long* w0,
                                         long long* rlo, long long* rhi, long long* slo, long long* shi) {
  *h0 = oy * p.sh - p.ph;
  *w0 = ox * p.sw - p.pw;
  pool_range(*h0, p.dh, p.h, p.kh, rlo, rhi);
  pool_range(*w0, p.dw, p.w, p.kw, slo, shi);
  if (p.countPad) return p.kh * p.kw;
  return (*rhi - *rlo) * (*shi - *slo);
}

template <class T>
__device__ void pool_avg_impl(T* y, const T* x, PoolP p) {
  typedef typename Elem<T>::acc A;
  long long ohw = p.oh * p.ow, hw = p.h * p.w;
  GRID_STRIDE(e, p.planes * ohw) {
    long long nc = e / ohw, o = e % ohw;
    const T* plane = x + nc * hw;
    long long h0, w0, rlo, rhi, slo, shi;
    long long div = pool_divisor(p, o / p.ow, o % p.ow, &h0, &w0, &rlo, &rhi, &slo, &shi);
    double sum = 0;
    for (long long r = rlo; r < rhi; r++) {
      long long row = (h0 + r * p.dh) * p.w + w0;
      for (long long s = slo; s < shi; s++) sum += (double)Elem<T>::load(plane, row + s * p.dw);
    }
    Elem<T>::store(y, e, div > 0 ? (A)(sum / (double)div) : (A)0);
  }
}

template <class T>
__device__ void pool_avg_grad_impl(T* dx, const T* dy, PoolP p) {
  typedef typename Elem<T>::acc A;
  long long ohw = p.oh * p.ow, hw = p.h * p.w;
  GRID_STRIDE(e, p.planes * hw) {
    long long nc = e / hw, q = e % hw, iy = q / p.w, ix = q % p.w;
    const T* g = dy + nc * ohw;
    A acc = 0;
    pool_windows_of(p, iy, ix, [&](long long oy, long long ox) {
      long long h0, w0, rlo, rhi, slo, shi;
      long long div = pool_divisor(p, oy, ox, &h0, &w0, &rlo, &rhi, &slo, &shi);
      acc += Elem<T>::load(g, oy * p.ow + ox) / (A)div;
    });
    Elem<T>::store(dx, e, acc);
  }
}

// pool_adaptive is PyTorch's adaptive window [floor(i·in/out),
// ceil((i+1)·in/out)) of output i.
static __device__ long long pool_adaptive_lo(long long i, long long in, long long out) { return i * in / out; }
static __device__ long long pool_adaptive_hi(long long i, long long in, long long out) {
  return ((i + 1) * in + out - 1) / out;
}

template <class T>
__device__ void pool_adaptive_avg_impl(T* y, const T* x, long long planes, long long h, long long w, long long oh,
                                       long long ow) {
  typedef typename Elem<T>::acc A;
  long long ohw = oh * ow, hw = h * w;
  GRID_STRIDE(e, planes * ohw) {
    long long nc = e / ohw, o = e % ohw, i = o / ow, j = o % ow;
    const T* plane = x + nc * hw;
    long long hlo = pool_adaptive_lo(i, h, oh), hhi = pool_adaptive_hi(i, h, oh);
    long long wlo = pool_adaptive_lo(j, w, ow), whi = pool_adaptive_hi(j, w, ow);
    double sum = 0;
    for (long long r = hlo; r < hhi; r++)
      for (long long s = wlo; s < whi; s++) sum += (double)Elem<T>::load(plane, r * w + s);
    Elem<T>::store(y, e, (A)(sum / (double)((hhi - hlo) * (whi - wlo))));
  }
}

// pool_adaptive_cover is the range [lo, hi] of outputs whose windows
// contain input r: window floor(r·out/in) does, and the windows' starts
// and ends both rise with the output index.
static __device__ void pool_adaptive_cover(long long r, long long in, long long out, long long* lo, long long* hi) {
  if (out == 0) {
    *lo = 0;
    *hi = -1;
    return;
  }
  long long i0 = r * out / in, l = i0, h = i0;
  while (l > 0 && pool_adaptive_hi(l - 1, in, out) > r) l--;
  while (h + 1 < out && pool_adaptive_lo(h + 1, in, out) <= r) h++;
  *lo = l;
  *hi = h;
}

template <class T>
__device__ void pool_adaptive_avg_grad_impl(T* dx, const T* dy, long long planes, long long h, long long w,
                                            long long oh, long long ow) {
  typedef typename Elem<T>::acc A;
  long long ohw = oh * ow, hw = h * w;
  GRID_STRIDE(e, planes * hw) {
    long long nc = e / hw, q = e % hw, r = q / w, s = q % w;
    const T* g = dy + nc * ohw;
    long long ilo, ihi, jlo, jhi;
    pool_adaptive_cover(r, h, oh, &ilo, &ihi);
    pool_adaptive_cover(s, w, ow, &jlo, &jhi);
    A acc = 0;
    for (long long i = ilo; i <= ihi; i++) {
      long long cnt_h = pool_adaptive_hi(i, h, oh) - pool_adaptive_lo(i, h, oh);
      for (long long j = jlo; j <= jhi; j++) {
        long long cnt = cnt_h * (pool_adaptive_hi(j, w, ow) - pool_adaptive_lo(j, w, ow));
        acc += Elem<T>::load(g, i * ow + j) / (A)cnt;
      }
    }
    Elem<T>::store(dx, e, acc);
  }
}

#define POOL_ARGS                                                                                        \
  long long planes, long long h, long long w, long long kh, long long kw, long long sh, long long sw,    \
      long long ph, long long pw, long long dh, long long dw, long long oh, long long ow, int countPad
#define POOL_P {planes, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, countPad}

#define POOL(SUF, T)                                                                                     \
  extern "C" __global__ void pool_max_##SUF(T* y, const T* x, POOL_ARGS) {                               \
    PoolP p = POOL_P;                                                                                    \
    pool_max_impl<T>(y, x, p);                                                                           \
  }                                                                                                      \
  extern "C" __global__ void pool_max_grad_##SUF(T* dx, const T* dy, const T* x, POOL_ARGS) {            \
    PoolP p = POOL_P;                                                                                    \
    pool_max_grad_impl<T>(dx, dy, x, p);                                                                 \
  }                                                                                                      \
  extern "C" __global__ void pool_avg_##SUF(T* y, const T* x, POOL_ARGS) {                               \
    PoolP p = POOL_P;                                                                                    \
    pool_avg_impl<T>(y, x, p);                                                                           \
  }                                                                                                      \
  extern "C" __global__ void pool_avg_grad_##SUF(T* dx, const T* dy, POOL_ARGS) {                        \
    PoolP p = POOL_P;                                                                                    \
    pool_avg_grad_impl<T>(dx, dy, p);                                                                    \
  }                                                                                                      \
  extern "C" __global__ void pool_adaptive_avg_##SUF(T* y, const T* x, long long planes, long long h,    \
                                                     long long w, long long oh, long long ow) {          \
    pool_adaptive_avg_impl<T>(y, x, planes, h, w, oh, ow);                                               \
  }                                                                                                      \
  extern "C" __global__ void pool_adaptive_avg_grad_##SUF(T* dx, const T* dy, long long planes,          \
                                                          long long h, long long w, long long oh,        \
                                                          long long ow) {                                \
    pool_adaptive_avg_grad_impl<T>(dx, dy, planes, h, w, oh, ow);                                        \
  }

FOR_FLOAT_TYPES(POOL)
