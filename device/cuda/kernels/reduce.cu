// reduce.cu: Reduce (sum, mean, max, min, var, argmax over any axes of a
// strided source) and SumSquares.
//
// Reduce sees the source as outs kept positions (Layout keep, the kept
// axes' shape and source strides) times count reduced positions (Layout
// red): output o reduces src[layout_offset(keep, o) + layout_offset(red, r)]
// for r in [0, count). Semantics are package kernels' reduceOne: sums in
// double (of the float value of 16-bit and integer elements); mean = sum /
// count; var = Σ(x − mean)² / (count − correction), two passes; max and min
// return the first NaN if there is one, else the extreme value; argmax
// returns the index of that element, the first one among ties; an empty
// reduction gives sum 0 and NaN for the others (argmax 0). The result is
// stored as a double rounded to dst's dtype.
//
// Two shapes of launch: reduce_block_* gives each output a block of 256
// threads (long reductions), reduce_thread_* one thread (short ones, and
// outputs adjacent in memory, as the bias gradient's column sums). The
// destination's dtype is a run-time code (store_dyn).
#include "common.cuh"

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_VAR, R_ARGMAX };

#define REDUCE_THREADS 256

// Best is the running extreme of max, min and argmax: at < 0 means empty.
struct Best {
  double v;
  long long at;
};

// best_merge combines two partial extremes as the sequential scan would:
// a NaN wins (the first one), else the larger (smaller) value, ties to the
// smaller index.
__device__ inline Best best_merge(Best a, Best b, bool min) {
  if (a.at < 0) return b;
  if (b.at < 0) return a;
  bool an = a.v != a.v, bn = b.v != b.v;
  if (an || bn) {
    if (an && bn) return a.at < b.at ? a : b;
    return an ? a : b;
  }
  if (a.v == b.v) return a.at < b.at ? a : b;
  bool aw = min ? a.v < b.v : a.v > b.v;
  return aw ? a : b;
}

template <class T> __device__ inline double elem(const T* src, long long i) {
  return (double)Elem<T>::load(src, i);
}

// finish turns a sum (and, for var, the sum of squared deviations) or an
// extreme into the stored value.
__device__ inline double finish(int op, double s, double ss, Best b, long long count, double arg) {
  switch (op) {
    case R_SUM: return s;
    case R_MEAN: return s / (double)count;
    case R_VAR: return ss / ((double)count - arg);
    case R_ARGMAX: return b.at < 0 ? 0.0 : (double)b.at;
  }
  return b.at < 0 ? __longlong_as_double(0x7ff8000000000000LL) : b.v;
}

template <class T>
__device__ void reduce_thread_impl(void* dst, int dt, const T* src, const Layout& keep, const Layout& red, long long outs,
                                   long long count, int op, double arg) {
  GRID_STRIDE(o, outs) {
    const T* base = src + layout_offset(keep, o);
    double s = 0, ss = 0;
    Best b = {0, -1};
    if (op == R_SUM || op == R_MEAN || op == R_VAR) {
      for (long long r = 0; r < count; r++) s += elem(base, layout_offset(red, r));
      if (op == R_VAR) {
        double mean = s / (double)count;
        for (long long r = 0; r < count; r++) {
          double d = elem(base, layout_offset(red, r)) - mean;
          ss += d * d;
        }
      }
    } else {
      for (long long r = 0; r < count; r++) {
        Best e = {elem(base, layout_offset(red, r)), r};
        b = best_merge(b, e, op == R_MIN);
      }
    }
    store_dyn(dst, dt, o, finish(op, s, ss, b, count, arg));
  }
}

// block_best combines the threads' extremes in shared memory, a fixed tree.
__device__ inline Best block_best(Best b, bool min) {
  __shared__ double sv[REDUCE_THREADS];
  __shared__ long long si[REDUCE_THREADS];
  int t = threadIdx.x;
  sv[t] = b.v;
  si[t] = b.at;
  __syncthreads();
  for (int h = REDUCE_THREADS / 2; h > 0; h >>= 1) {
    if (t < h) {
      Best x = {sv[t], si[t]}, y = {sv[t + h], si[t + h]};
      Best m = best_merge(x, y, min);
      sv[t] = m.v;
      si[t] = m.at;
    }
    __syncthreads();
  }
  Best out = {sv[0], si[0]};
  __syncthreads();
  return out;
}

// reduce_block_impl must run with REDUCE_THREADS threads a block.
template <class T>
__device__ void reduce_block_impl(void* dst, int dt, const T* src, const Layout& keep, const Layout& red, long long outs,
                                  long long count, int op, double arg) {
  __shared__ double part[32];
  for (long long o = blockIdx.x; o < outs; o += gridDim.x) {
    const T* base = src + layout_offset(keep, o);
    double s = 0, ss = 0;
    Best b = {0, -1};
    if (op == R_SUM || op == R_MEAN || op == R_VAR) {
      for (long long r = threadIdx.x; r < count; r += blockDim.x) s += elem(base, layout_offset(red, r));
      s = block_reduce(s, SumOp(), part);
      if (op == R_VAR) {
        double mean = s / (double)count;
        for (long long r = threadIdx.x; r < count; r += blockDim.x) {
          double d = elem(base, layout_offset(red, r)) - mean;
          ss += d * d;
        }
        ss = block_reduce(ss, SumOp(), part);
      }
    } else {
      for (long long r = threadIdx.x; r < count; r += blockDim.x) {
        Best e = {elem(base, layout_offset(red, r)), r};
        b = best_merge(b, e, op == R_MIN);
      }
      b = block_best(b, op == R_MIN);
    }
    if (threadIdx.x == 0) store_dyn(dst, dt, o, finish(op, s, ss, b, count, arg));
  }
}

#define REDUCE(sfx, T)                                                                                  \
  extern "C" __global__ void reduce_thread_##sfx(void* dst, int dt, const T* src, Layout keep, Layout red,  \
                                                  long long outs, long long count, int op, double arg) {    \
    reduce_thread_impl<T>(dst, dt, src, keep, red, outs, count, op, arg);                                  \
  }                                                                                                         \
  extern "C" __global__ void reduce_block_##sfx(void* dst, int dt, const T* src, Layout keep, Layout red,   \
                                                 long long outs, long long count, int op, double arg) {     \
    reduce_block_impl<T>(dst, dt, src, keep, red, outs, count, op, arg);                                   \
  }
FOR_ALL_TYPES(REDUCE)

// ---- SumSquares: bit for bit kernels.SumSquares ----
//
// The source is cut into chunks of 4096 elements; chunk c's sum is
// (s0 + s1) + (s2 + s3), lane l summing the squares of elements 4k + l in
// order and lane 0 then the tail of fewer than four; the chunk sums are
// added in order. Pass one (sumsq_chunks) gives each chunk four adjacent
// threads and writes up to SUMSQ_MAX_CHUNKS chunk sums to a module buffer;
// pass two (sumsq_total) adds them in order in one thread, onto dst when
// accumulate is set (a source of more chunks takes several rounds).

#define SUMSQ_CHUNK 4096
#define SUMSQ_MAX_CHUNKS 65536

__device__ double sumsq_partials[SUMSQ_MAX_CHUNKS];

template <class T> __device__ void sumsq_chunks_impl(const T* src, long long n, long long chunks) {
  long long lanes = chunks * 4;
  long long limit = (lanes + 31) / 32 * 32;  // whole warps, for the shuffles
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < limit;
       i += (long long)blockDim.x * gridDim.x) {
    double s = 0;
    long long c = i >> 2;
    int lane = (int)(i & 3);
    long long lo = c * SUMSQ_CHUNK, len = 0;
    if (i < lanes) {
      len = n - lo < SUMSQ_CHUNK ? n - lo : SUMSQ_CHUNK;
      long long q = len / 4;
      for (long long k = 0; k < q; k++) {
        double x = elem(src, lo + 4 * k + lane);
        s += dmul_rn(x, x);
      }
      if (lane == 0)
        for (long long k = 4 * q; k < len; k++) {
          double x = elem(src, lo + k);
          s += dmul_rn(x, x);
        }
    }
    double pair = s + __shfl_down_sync(0xffffffffu, s, 1);  // lanes 0 and 2: s0+s1, s2+s3
    double total = pair + __shfl_down_sync(0xffffffffu, pair, 2);
    if (i < lanes && lane == 0) sumsq_partials[c] = total;
  }
}

#define SUMSQ(sfx, T)                                                                               \
  extern "C" __global__ void sumsq_chunks_##sfx(const T* src, long long n, long long chunks) {       \
    sumsq_chunks_impl<T>(src, n, chunks);                                                           \
  }
FOR_FLOAT_TYPES(SUMSQ)

extern "C" __global__ void sumsq_total(double* dst, long long chunks, int accumulate) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double s = accumulate ? dst[0] : 0.0;
  for (long long c = 0; c < chunks; c++) s += sumsq_partials[c];
  dst[0] = s;
}
