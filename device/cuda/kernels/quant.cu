// Symmetric int8 quantization for package quant (quant.go), bit for bit
// the cpu's internal/kernels/quant.go, quantconv.go and int8.go:
//
//   q = clamp(round(x·(1/scale)), −127, 127), round half to even, 1/scale
//   rounded to float (__frcp_rn), a NaN giving −127; read back as q·scale.
//
// quant_scales_f32: one block per row (grid-stride over rows): the largest
// magnitude as the largest unsigned bit pattern of |x| (a NaN above every
// number, so a NaN row gets a NaN scale, as the cpu's max does), then
// max(m / 127, 2^−23).
//
// quantize_f32, fake_quantize_T, fake_quantize_grad_T: one thread per
// element (grid-stride); scale holds one value (per_row 0) or one per row
// of cols elements. T is f32 or f64 (the f64 variants compute in double:
// 1/scale, the product, the clamp and the rounding, a NaN staying NaN).
//
// conv_im2row_i8: the im2col matrix of cnt samples of one group,
// transposed: row j = (sample i, position p) of cnt·OH·OW holds the
// window of x at p, (c, r, s) in order, 0 in the padding — so that the
// convolution is the same A·Bᵀ GEMM as a Linear layer.
//
// gemm_i8: C = A (M, K) · B (N, K)ᵀ exact in int32 (__dp4a on four int8
// at a time), written through the dequantizing epilogue into float y:
//
//   y = relu?( float(acc)·(xscale·wscale[s]) + bias[s] )   (no FMA)
//
// with s the column (Linear: the output feature) or the row (convolution:
// the filter), and y's element of (row, col) at
// row·srow + (col / pcol)·souter + (col % pcol)·sinner. Without a bias a
// Linear adds nothing and a convolution adds +0 (as the cpu does: they
// differ for −0). Tiles of TM × TN outputs and TK bytes of K in shared
// memory, 256 threads a block, each 4 × 4 outputs; blocks stride over the
// tiles (grids are capped).
#include "common.cuh"

#define QMAX 127.0f
#define QMIN_SCALE 1.1920928955078125e-07f  // 2^−23

// quant_int is the cpu's quantInt: round(clamp(v, −127, 127)), NaN → −127.
static __device__ inline int quant_int(float v) {
  if (!(v >= -QMAX)) v = -QMAX;
  if (v > QMAX) v = QMAX;
  return __float2int_rn(v);
}

// quant_f64 is the f64 path of FakeQuantize: RoundToEven of the clamped
// v, a NaN staying NaN (Go's min and max keep it).
static __device__ inline double quant_f64(double v) {
  if (v != v) return v;
  if (v < -127.0) v = -127.0;
  if (v > 127.0) v = 127.0;
  return rint(v);
}

struct UMaxOp {
  __device__ unsigned int operator()(unsigned int a, unsigned int b) const { return a > b ? a : b; }
};

extern "C" __global__ void quant_scales_f32(float* dst, const float* src, long long rows, long long cols) {
  __shared__ unsigned int red[32];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* x = src + r * cols;
    unsigned int m = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
      unsigned int a = __float_as_uint(x[j]) & 0x7fffffffu;
      m = a > m ? a : m;
    }
    m = block_reduce(m, UMaxOp(), red);
    if (threadIdx.x == 0) {
      float s = __uint_as_float(m) / QMAX;
      dst[r] = (s != s || s > QMIN_SCALE) ? s : QMIN_SCALE;
    }
  }
}

// scale_of returns the scale of element i.
static __device__ inline float scale_of(const float* scale, long long i, long long cols, int per_row) {
  return per_row ? scale[i / cols] : scale[0];
}

extern "C" __global__ void quantize_f32(signed char* dst, const float* src, const float* scale, long long n,
                                        long long cols, int per_row) {
  GRID_STRIDE(i, n) {
    float inv = __frcp_rn(scale_of(scale, i, cols, per_row));
    dst[i] = (signed char)quant_int(fmul_rn(src[i], inv));
  }
}

extern "C" __global__ void fake_quantize_f32(float* dst, const float* src, const float* scale, long long n,
                                             long long cols, int per_row) {
  GRID_STRIDE(i, n) {
    float s = scale_of(scale, i, cols, per_row);
    dst[i] = fmul_rn((float)quant_int(fmul_rn(src[i], __frcp_rn(s))), s);
  }
}

extern "C" __global__ void fake_quantize_f64(double* dst, const double* src, const float* scale, long long n,
                                             long long cols, int per_row) {
  GRID_STRIDE(i, n) {
    double s = (double)scale_of(scale, i, cols, per_row);
    dst[i] = dmul_rn(quant_f64(dmul_rn(src[i], 1.0 / s)), s);
  }
}

extern "C" __global__ void fake_quantize_grad_f32(float* dx, const float* dy, const float* src, const float* scale,
                                                  long long n, long long cols, int per_row) {
  GRID_STRIDE(i, n) {
    float v = fmul_rn(src[i], __frcp_rn(scale_of(scale, i, cols, per_row)));
    dx[i] = fabsf(v) < QMAX + 0.5f ? dy[i] : 0.0f;
  }
}

extern "C" __global__ void fake_quantize_grad_f64(double* dx, const double* dy, const double* src, const float* scale,
                                                  long long n, long long cols, int per_row) {
  GRID_STRIDE(i, n) {
    double v = dmul_rn(src[i], 1.0 / (double)scale_of(scale, i, cols, per_row));
    dx[i] = fabs(v) < 127.5 ? dy[i] : 0.0;
  }
}

// x points at sample 0, group g; xs is a sample's stride in x (C·H·W).
extern "C" __global__ void conv_im2row_i8(signed char* col, const signed char* x, long long cnt, long long xs,
                                          long long cg, long long h, long long w, long long r, long long s,
                                          long long sh, long long sw, long long ph, long long pw, long long dh,
                                          long long dw, long long oh, long long ow) {
  long long crs = cg * r * s, p = oh * ow, n = cnt * p * crs;
  GRID_STRIDE(i, n) {
    long long row = i % crs, j = i / crs;
    long long q = j % p, smp = j / p;
    long long oy = q / ow, ox = q % ow;
    long long ks = row % s, kr = (row / s) % r, c = row / (s * r);
    long long iy = oy * sh - ph + kr * dh, ix = ox * sw - pw + ks * dw;
    signed char v = 0;
    if (iy >= 0 && iy < h && ix >= 0 && ix < w) v = x[smp * xs + (c * h + iy) * w + ix];
    col[i] = v;
  }
}

#define TM 64
#define TN 64
#define TK 32            // bytes of K per tile
#define TKW (TK / 4)     // 32-bit words of K per tile
#define GEMM_THREADS 256 // 16 × 16, each 4 × 4 outputs

// load_word packs the 4 int8 at k0..k0+3 of row `row` of x (rows × k,
// leading dimension ld) into one word, zeros beyond the matrix.
static __device__ inline int load_word(const signed char* x, long long rows, long long k, long long ld,
                                       long long row, long long k0) {
  if (row >= rows) return 0;
  const signed char* p = x + row * ld;
  unsigned int v = 0;
  for (int b = 0; b < 4; b++)
    if (k0 + b < k) v |= (unsigned int)(unsigned char)p[k0 + b] << (8 * b);
  return (int)v;
}

// GemmI8Out is where and how gemm_i8 writes its outputs.
struct GemmI8Out {
  float* y;
  const float* xscale;
  const float* wscale;
  const float* bias;
  long long srow, pcol, souter, sinner;
  int scale_rows, add_zero, relu;
};

static __device__ inline void gemm_i8_store(const GemmI8Out& o, long long row, long long col, int acc) {
  long long si = o.scale_rows ? row : col;
  float v = fmul_rn((float)acc, fmul_rn(o.xscale[0], o.wscale[si]));
  if (o.bias) v = v + o.bias[si];
  else if (o.add_zero) v = v + 0.0f;
  if (o.relu) v = v > 0.0f ? v : 0.0f;  // +0 for negatives, −0 and NaN
  o.y[row * o.srow + (col / o.pcol) * o.souter + (col % o.pcol) * o.sinner] = v;
}

// gemm_i8_tile accumulates the tile at (bm, bn) into acc over all of K.
static __device__ void gemm_i8_tile(int (*sa)[TKW + 1], int (*sb)[TKW + 1], const signed char* a,
                                    const signed char* b, long long m, long long n, long long k, long long lda,
                                    long long ldb, long long bm, long long bn, int acc[4][4]) {
  int t = threadIdx.x, tx = t % 16, ty = t / 16;
  for (long long k0 = 0; k0 < k; k0 += TK) {
    for (int l = t; l < TM * TKW; l += GEMM_THREADS) {
      int row = l / TKW, wd = l % TKW;
      sa[row][wd] = load_word(a, m, k, lda, bm + row, k0 + 4 * wd);
      sb[row][wd] = load_word(b, n, k, ldb, bn + row, k0 + 4 * wd);
    }
    __syncthreads();
    for (int wd = 0; wd < TKW; wd++) {
      int av[4], bv[4];
      for (int i = 0; i < 4; i++) av[i] = sa[ty + 16 * i][wd];
      for (int j = 0; j < 4; j++) bv[j] = sb[tx + 16 * j][wd];
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = __dp4a(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
}

extern "C" __global__ void gemm_i8(const signed char* a, const signed char* b, long long m, long long n,
                                   long long k, long long lda, long long ldb, float* y, const float* xscale,
                                   const float* wscale, const float* bias, long long srow, long long pcol,
                                   long long souter, long long sinner, int scale_rows, int add_zero, int relu) {
  __shared__ int sa[TM][TKW + 1];
  __shared__ int sb[TN][TKW + 1];
  GemmI8Out o = {y, xscale, wscale, bias, srow, pcol, souter, sinner, scale_rows, add_zero, relu};
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  for (long long bm = (long long)blockIdx.y * TM; bm < m; bm += (long long)gridDim.y * TM) {
    for (long long bn = (long long)blockIdx.x * TN; bn < n; bn += (long long)gridDim.x * TN) {
      int acc[4][4] = {{0}};
      gemm_i8_tile(sa, sb, a, b, m, n, k, lda, ldb, bm, bn, acc);
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
          long long row = bm + ty + 16 * i, col = bn + tx + 16 * j;
          if (row < m && col < n) gemm_i8_store(o, row, col, acc[i][j]);
        }
    }
  }
}
