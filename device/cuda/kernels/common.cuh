// common.cuh: what every kernel source of device/cuda shares.
//
// Compiled by NVRTC for the GPU and by g++ under internal/cuda/emu's shim
// (which defines HEADROOM_EMU) for the host, so it uses no standard header:
// only built-in math, integer types and the device features listed in the
// backend's contract.
//
// Storage types, one per dtype (the kernel-name suffix in brackets):
//   double [f64], float [f32], half16 [f16], bfloat16 [bf16],
//   signed char [i8], int [i32], long long [i64].
// 16-bit floats are stored as their bits (half16, bfloat16: one unsigned
// short each) and converted with exactly package dtype's rounding.
//
// Elem<T> loads and stores elements of storage type T:
//   Elem<T>::acc                   the compute type: double for double, float
//                                  for every other dtype (as the cpu device
//                                  computes them)
//   Elem<T>::load(p, i)            element i as acc
//   Elem<T>::store(p, i, acc v)    v rounded (16-bit) or truncated and
//                                  saturated (integers; NaN → 0) into p[i]
//   Elem<T>::load64(p, i)          element i as double (exact but for I64
//                                  beyond 2^53)
//   Elem<T>::store64(p, i, double) v rounded once, directly, to T (package
//                                  dtype's FromF64)

#ifndef HEADROOM_COMMON_CUH
#define HEADROOM_COMMON_CUH

#ifdef HEADROOM_EMU
#define DYN_SMEM(T, name) T* name = (T*)emu_dynamic_smem()
#else
#define DYN_SMEM(T, name) extern __shared__ T name[]
#endif

// dmul_rn and fmul_rn are products that the compiler may not fuse into a
// following addition (NVRTC contracts a*b+c into an FMA by default): for
// sums that must match the cpu device bit for bit.
#ifdef HEADROOM_EMU
static inline double dmul_rn(double a, double b) { return a * b; }
static inline float fmul_rn(float a, float b) { return a * b; }
#else
__device__ inline double dmul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float fmul_rn(float a, float b) { return __fmul_rn(a, b); }
#endif

// GRID_STRIDE(i, n) loops i over [0, n) across every thread of a 1-D grid,
// consecutive threads on consecutive i (coalesced).
#define GRID_STRIDE(i, n)                                                  \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;     \
       i < (long long)(n); i += (long long)blockDim.x * gridDim.x)

// FOR_FLOAT_TYPES(X) expands X(suffix, T) for the four float dtypes;
// FOR_INT_TYPES for the three integer ones; FOR_ALL_TYPES for all seven.
// A source defines a macro FILL(sfx, T) that writes one wrapper,
//   extern "C" __global__ void fill_##sfx(T* p, ...) { fill_impl<T>(p, ...); }
// and expands FOR_ALL_TYPES(FILL).
#define FOR_FLOAT_TYPES(X) X(f64, double) X(f32, float) X(f16, half16) X(bf16, bfloat16)
#define FOR_INT_TYPES(X) X(i8, signed char) X(i32, int) X(i64, long long)
#define FOR_ALL_TYPES(X) FOR_FLOAT_TYPES(X) FOR_INT_TYPES(X)
// FOR_ALL_TYPES_WITH(X, s, T) expands X(s, T, sfx2, T2) for all seven
// dtypes: nest it inside a FOR_ALL_TYPES expansion for kernels with two
// dtype parameters (names base_<s>_<sfx2>).
#define FOR_ALL_TYPES_WITH(X, S, T)                                          \
  X(S, T, f64, double) X(S, T, f32, float) X(S, T, f16, half16)              \
  X(S, T, bf16, bfloat16) X(S, T, i8, signed char) X(S, T, i32, int)         \
  X(S, T, i64, long long)

// half16 and bfloat16 hold a 16-bit float's bit pattern.
struct half16 { unsigned short bits; };
struct bfloat16 { unsigned short bits; };

// ---- 16-bit conversions: bit for bit package dtype (scalar.go) ----

// f32_to_f16 is dtype.F16FromF32: nearest, ties to even; overflow to ±Inf;
// subnormals exact; NaN keeps its sign and top payload, quiet bit set.
__device__ inline unsigned short f32_to_f16(float f) {
  unsigned int bits = __float_as_uint(f);
  unsigned int sign = (bits >> 16) & 0x8000u;
  unsigned int a = bits & 0x7fffffffu;
  if (a >= 0x47800000u) {  // |f| >= 2^16, Inf or NaN
    if (a > 0x7f800000u) return (unsigned short)(sign | 0x7c00u | 0x0200u | ((a >> 13) & 0x3ffu));
    return (unsigned short)(sign | 0x7c00u);
  }
  if (a >= 0x38800000u) {  // normal result (or Inf after the carry)
    unsigned int v = a - ((127u - 15u) << 23);
    v += 0xfffu + ((v >> 13) & 1u);
    return (unsigned short)(sign | ((v >> 13) & 0xffffu));
  }
  if (a < 0x33000000u) return (unsigned short)sign;  // below 2^-25
  int e = (int)(a >> 23) - 127;
  unsigned int shift = (unsigned int)(-e - 1);  // 14..24
  unsigned int full = (a & 0x7fffffu) | 0x800000u;
  unsigned int r = full >> shift;
  unsigned int rem = full & ((1u << shift) - 1u);
  unsigned int half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (r & 1u))) r++;
  return (unsigned short)(sign | r);
}

// f16_to_f32 is dtype.F16ToF32 (exact).
__device__ inline float f16_to_f32(unsigned short h) {
  unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
  unsigned int exp = h & 0x7c00u;
  if (exp != 0 && exp != 0x7c00u)
    return __uint_as_float(sign | ((((unsigned int)h & 0x7fffu) << 13) + ((127u - 15u) << 23)));
  unsigned int frac = h & 0x3ffu;
  if (exp != 0) return __uint_as_float(sign | 0x7f800000u | (frac << 13));
  float v = (float)frac * 5.9604644775390625e-08f;  // 2^-24, exact
  return sign ? -v : v;
}

// f32_to_bf16 is dtype.BF16FromF32: nearest, ties to even; NaN stays a
// quiet NaN with its sign.
__device__ inline unsigned short f32_to_bf16(float f) {
  unsigned int bits = __float_as_uint(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((bits >> 16) | 0x0040u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (unsigned short)(bits >> 16);
}

// bf16_to_f32 is dtype.BF16ToF32 (exact).
__device__ inline float bf16_to_f32(unsigned short b) {
  return __uint_as_float((unsigned int)b << 16);
}

// f64_to_narrow is dtype's narrowF64: x rounded once, nearest with ties to
// even, to a format of expBits exponent and fracBits fraction bits.
__device__ inline unsigned short f64_to_narrow(double x, int expBits, int fracBits) {
  unsigned long long bits = (unsigned long long)__double_as_longlong(x);
  unsigned int sign = (unsigned int)(bits >> 48) & 0x8000u;
  int exp = (int)(bits >> 52) & 0x7ff;
  unsigned long long frac = bits & ((1ull << 52) - 1ull);
  int bias = (1 << (expBits - 1)) - 1;
  unsigned int inf = ((1u << expBits) - 1u) << fracBits;
  int drop = 52 - fracBits;
  if (exp == 0x7ff) {
    if (frac != 0)
      return (unsigned short)(sign | inf | (1u << (fracBits - 1)) | (unsigned int)(frac >> drop));
    return (unsigned short)(sign | inf);
  }
  if (exp == 0) return (unsigned short)sign;
  int e = exp - 1023;
  if (e > bias) return (unsigned short)(sign | inf);
  if (e >= 1 - bias) {
    unsigned long long r = ((unsigned long long)(e + bias) << fracBits) | (frac >> drop);
    unsigned long long rem = frac & ((1ull << drop) - 1ull);
    unsigned long long half = 1ull << (drop - 1);
    if (rem > half || (rem == half && (r & 1ull))) r++;
    return (unsigned short)(sign | (unsigned int)r);
  }
  int shift = drop + (1 - bias - e);
  if (shift > 53) return (unsigned short)sign;
  unsigned long long full = frac | (1ull << 52);
  unsigned long long r = full >> shift;
  unsigned long long rem = full & ((1ull << shift) - 1ull);
  unsigned long long half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (r & 1ull))) r++;
  return (unsigned short)(sign | (unsigned int)r);
}

// f64_to_f16 and f64_to_bf16 round a double straight to 16 bits (dtype's
// FromF64: no double rounding through float).
__device__ inline unsigned short f64_to_f16(double x) { return f64_to_narrow(x, 5, 10); }
__device__ inline unsigned short f64_to_bf16(double x) { return f64_to_narrow(x, 8, 7); }

// ---- integer saturation: dtype's satI8/satI32/satI64 ----

__device__ inline signed char sat_i8(double x) {
  if (x != x) return 0;
  if (x >= 127.0) return 127;
  if (x <= -128.0) return -128;
  return (signed char)x;
}
__device__ inline int sat_i32(double x) {
  if (x != x) return 0;
  if (x >= 2147483647.0) return 2147483647;
  if (x <= -2147483648.0) return (int)(-2147483647 - 1);
  return (int)x;
}
__device__ inline long long sat_i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0) return 9223372036854775807LL;
  if (x <= -9223372036854775808.0) return (-9223372036854775807LL - 1LL);
  return (long long)x;
}

// ---- typed element access ----

template <class T> struct Elem;

template <> struct Elem<double> {
  typedef double acc;
  static __device__ acc load(const double* p, long long i) { return p[i]; }
  static __device__ void store(double* p, long long i, acc v) { p[i] = v; }
  static __device__ double load64(const double* p, long long i) { return p[i]; }
  static __device__ void store64(double* p, long long i, double v) { p[i] = v; }
};

template <> struct Elem<float> {
  typedef float acc;
  static __device__ acc load(const float* p, long long i) { return p[i]; }
  static __device__ void store(float* p, long long i, acc v) { p[i] = v; }
  static __device__ double load64(const float* p, long long i) { return (double)p[i]; }
  static __device__ void store64(float* p, long long i, double v) { p[i] = (float)v; }
};

template <> struct Elem<half16> {
  typedef float acc;
  static __device__ acc load(const half16* p, long long i) { return f16_to_f32(p[i].bits); }
  static __device__ void store(half16* p, long long i, acc v) { p[i].bits = f32_to_f16(v); }
  static __device__ double load64(const half16* p, long long i) { return (double)f16_to_f32(p[i].bits); }
  static __device__ void store64(half16* p, long long i, double v) { p[i].bits = f64_to_f16(v); }
};

template <> struct Elem<bfloat16> {
  typedef float acc;
  static __device__ acc load(const bfloat16* p, long long i) { return bf16_to_f32(p[i].bits); }
  static __device__ void store(bfloat16* p, long long i, acc v) { p[i].bits = f32_to_bf16(v); }
  static __device__ double load64(const bfloat16* p, long long i) { return (double)bf16_to_f32(p[i].bits); }
  static __device__ void store64(bfloat16* p, long long i, double v) { p[i].bits = f64_to_bf16(v); }
};

// Integer dtypes compute in float, as the cpu device does (dtype.ToF32 and
// dtype.FromF32); load64/store64 go through double (dtype.ToF64/FromF64).
template <> struct Elem<signed char> {
  typedef float acc;
  static __device__ acc load(const signed char* p, long long i) { return (float)p[i]; }
  static __device__ void store(signed char* p, long long i, acc v) { p[i] = sat_i8((double)v); }
  static __device__ double load64(const signed char* p, long long i) { return (double)p[i]; }
  static __device__ void store64(signed char* p, long long i, double v) { p[i] = sat_i8(v); }
};

template <> struct Elem<int> {
  typedef float acc;
  static __device__ acc load(const int* p, long long i) { return (float)p[i]; }
  static __device__ void store(int* p, long long i, acc v) { p[i] = sat_i32((double)v); }
  static __device__ double load64(const int* p, long long i) { return (double)p[i]; }
  static __device__ void store64(int* p, long long i, double v) { p[i] = sat_i32(v); }
};

template <> struct Elem<long long> {
  typedef float acc;
  static __device__ acc load(const long long* p, long long i) { return (float)p[i]; }
  static __device__ void store(long long* p, long long i, acc v) { p[i] = sat_i64((double)v); }
  static __device__ double load64(const long long* p, long long i) { return (double)p[i]; }
  static __device__ void store64(long long* p, long long i, double v) { p[i] = sat_i64(v); }
};

// ---- run-time dtypes: codes are package dtype's DType values ----
//
// For operands whose dtype varies more than is worth a kernel variant (the
// destination of a reduction, the condition of Where): the operand is a
// void pointer plus its dtype code, and the element goes through double.

enum { DT_F64 = 1, DT_F32 = 2, DT_F16 = 3, DT_BF16 = 4, DT_I8 = 5, DT_I32 = 6, DT_I64 = 7 };

// load_dyn is Elem<T>::load64 of element i of a dtype-code operand.
__device__ inline double load_dyn(const void* p, int dt, long long i) {
  switch (dt) {
    case DT_F64: return Elem<double>::load64((const double*)p, i);
    case DT_F32: return Elem<float>::load64((const float*)p, i);
    case DT_F16: return Elem<half16>::load64((const half16*)p, i);
    case DT_BF16: return Elem<bfloat16>::load64((const bfloat16*)p, i);
    case DT_I8: return Elem<signed char>::load64((const signed char*)p, i);
    case DT_I32: return Elem<int>::load64((const int*)p, i);
  }
  return Elem<long long>::load64((const long long*)p, i);
}

// store_dyn is Elem<T>::store64 into element i of a dtype-code operand.
__device__ inline void store_dyn(void* p, int dt, long long i, double v) {
  switch (dt) {
    case DT_F64: Elem<double>::store64((double*)p, i, v); return;
    case DT_F32: Elem<float>::store64((float*)p, i, v); return;
    case DT_F16: Elem<half16>::store64((half16*)p, i, v); return;
    case DT_BF16: Elem<bfloat16>::store64((bfloat16*)p, i, v); return;
    case DT_I8: Elem<signed char>::store64((signed char*)p, i, v); return;
    case DT_I32: Elem<int>::store64((int*)p, i, v); return;
  }
  Elem<long long>::store64((long long*)p, i, v);
}

// ---- layouts ----

// Layout is an operand's shape and strides in elements (stride 0
// broadcasts), rank ≤ 8; the operand's pointer already includes its offset.
struct Layout {
  long long shape[8];
  long long stride[8];
  int rank;
};

// layout_offset returns the element offset of the row-major linear index
// `linear` of l's shape.
__device__ inline long long layout_offset(const Layout& l, long long linear) {
  if (l.rank == 1) return linear * l.stride[0];  // the dense fast path
  long long off = 0;
  for (int d = l.rank - 1; d >= 0; d--) {
    long long s = l.shape[d];
    long long q = linear / s;
    off += (linear - q * s) * l.stride[d];
    linear = q;
  }
  return off;
}

// ---- block reductions ----

// SumOp and NanMaxOp combine two values for block_reduce; NanMaxOp keeps
// a NaN (as the cpu's rowMax does).
struct SumOp {
  template <class A> __device__ A operator()(A a, A b) const { return a + b; }
};
struct NanMaxOp {
  template <class A> __device__ A operator()(A a, A b) const { return (a > b || a != a) ? a : b; }
};

// warp_reduce combines v over the 32 lanes of a warp; lane 0 gets the result.
template <class A, class Op> __device__ inline A warp_reduce(A v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

// block_reduce combines v over the threads of a 1-D block (blockDim.x a
// multiple of 32, at most 1024) in a fixed order that depends only on
// blockDim.x, and returns the result to every thread. smem holds 32 A
// (a static __shared__ array of the caller). Every thread must call it.
template <class A, class Op> __device__ inline A block_reduce(A v, Op op, A* smem) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warps = (blockDim.x + 31) >> 5;
  v = warp_reduce(v, op);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {  // the warps' partials, in warp order
    A r = smem[0];
    for (int k = 1; k < warps; k++) r = op(r, smem[k]);
    smem[0] = r;
  }
  __syncthreads();
  A out = smem[0];
  __syncthreads();  // smem may be reused by the caller's next reduction
  return out;
}

// block_sum returns Σ v over the block (fixed order), to every thread.
static __device__ inline double block_sum(double v) {
  __shared__ double red[32];
  return block_reduce(v, SumOp(), red);
}

// row_max returns the largest of x[0..n) (NaN if one is NaN, −∞ when
// empty) to every thread of the block.
template <class T> static __device__ inline typename Elem<T>::acc row_max(const T* x, long long n) {
  typedef typename Elem<T>::acc A;
  __shared__ A red[32];
  A m = (A)__longlong_as_double(0xfff0000000000000LL);
  for (long long j = threadIdx.x; j < n; j += blockDim.x) m = NanMaxOp()(m, Elem<T>::load(x, j));
  return block_reduce(m, NanMaxOp(), red);
}

// exp_acc is exp in the compute type (float or double).
static __device__ inline float exp_acc(float x) { return expf(x); }
static __device__ inline double exp_acc(double x) { return exp(x); }

#endif  // HEADROOM_COMMON_CUH
