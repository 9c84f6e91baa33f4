// elementwise.cu: Copy, Fill, Unary, UnaryGrad, Binary, Axpy and Where.
//
// Every kernel is a grid-stride loop over the n elements of the output in
// row-major order; each operand's Layout maps the linear index to its
// element (a rank-1 layout is the dense fast path). The arithmetic follows
// package kernels (the cpu device) op for op: F64 in double; F32, F16, BF16
// and the integer dtypes in float, except the ops the cpu device computes in
// double and rounds once (see unary_float).
#include "common.cuh"

// ---- Copy: D ← S, converted as package dtype converts ----

template <class D, class S> struct Conv {
  static __device__ void run(D* d, long long i, const S* s, long long j) {
    Elem<D>::store64(d, i, Elem<S>::load64(s, j));
  }
};
// One dtype: the bits are copied unchanged (NaN payloads, all of I64).
template <class T> struct Conv<T, T> {
  static __device__ void run(T* d, long long i, const T* s, long long j) { d[i] = s[j]; }
};
// I64 → F32 rounds once, as dtype.ToF32 does.
template <> struct Conv<float, long long> {
  static __device__ void run(float* d, long long i, const long long* s, long long j) { d[i] = (float)s[j]; }
};

template <class D, class S>
__device__ void copy_impl(D* dst, const Layout& dl, const S* src, const Layout& sl, long long n) {
  GRID_STRIDE(i, n) Conv<D, S>::run(dst, layout_offset(dl, i), src, layout_offset(sl, i));
}

#define COPY(ds, D, ss, S)                                                                      \
  extern "C" __global__ void copy_##ds##_##ss(D* dst, Layout dl, const S* src, Layout sl, long long n) { \
    copy_impl<D, S>(dst, dl, src, sl, n);                                                       \
  }
#define COPY_TO(ds, D) FOR_ALL_TYPES_WITH(COPY, ds, D)
FOR_ALL_TYPES(COPY_TO)

// ---- Fill ----

template <class T> __device__ void fill_impl(T* dst, const Layout& dl, long long n, double v) {
  GRID_STRIDE(i, n) Elem<T>::store64(dst, layout_offset(dl, i), v);
}
#define FILL(sfx, T)                                                                   \
  extern "C" __global__ void fill_##sfx(T* dst, Layout dl, long long n, double v) {     \
    fill_impl<T>(dst, dl, n, v);                                                       \
  }
FOR_ALL_TYPES(FILL)

// ---- Unary: op codes in the order of device.UnaryOp ----

enum {
  U_NEG, U_ABS, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_TANH, U_SIGMOID, U_RELU,
  U_GELU_TANH, U_GELU_ERF, U_POW, U_SCALE, U_ADD_SCALAR
};

#define SQRT_2_OVER_PI 0.7978845608028654
#define GELU_C 0.044715
#define INV_SQRT2 0.7071067811865476
#define INV_SQRT_2PI 0.3989422804014327

// unary_double is kernels.UnaryFunc.
__device__ inline double unary_double(int op, double x, double arg) {
  switch (op) {
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_SQRT: return sqrt(x);
    case U_RSQRT: return 1.0 / sqrt(x);
    case U_TANH: return tanh(x);
    case U_SIGMOID:
      if (x >= 0) return 1.0 / (1.0 + exp(-x));
      else { double e = exp(x); return e / (1.0 + e); }
    case U_RELU: return x > 0 ? x : 0.0;
    case U_GELU_TANH: return 0.5 * x * (1.0 + tanh(SQRT_2_OVER_PI * (x + GELU_C * x * x * x)));
    case U_GELU_ERF: return 0.5 * x * (1.0 + erf(x * INV_SQRT2));
    case U_POW: return pow(x, arg);
    case U_SCALE: return x * arg;
    case U_ADD_SCALAR: return x + arg;
  }
  return x;
}

// gelu_sigmoids sets s = σ(w) and r = 1 − σ(w) for the tanh GELU's
// w = 2·√(2/π)·(x + 0.044715x³), both from one e^−|w| (no cancellation):
// GELU(x) = x·σ(w), GELU'(x) = σ(w) + x·σ(w)·(1 − σ(w))·w′, as the cpu
// device's float32 functions write them.
__device__ inline void gelu_sigmoids(float x, float* s, float* r) {
  float w = 2.0f * (float)SQRT_2_OVER_PI * (x + (float)GELU_C * x * x * x);
  float e = expf(-fabsf(w));
  float a = 1.0f / (1.0f + e), b = e / (1.0f + e);
  *s = w >= 0.0f ? a : b;
  *r = w >= 0.0f ? b : a;
}

// unary_float computes in float what the cpu device computes in float32
// (Neg, Abs, Relu, Scale exactly; Exp, Tanh, Sigmoid and GeluTanh, which
// the cpu takes from fast float32 approximations, with the built-in float
// functions) and the rest in double, rounded once, as the cpu does.
__device__ inline float unary_float(int op, float x, double arg) {
  switch (op) {
    case U_NEG: return -x;
    case U_ABS: return fabsf(x);
    case U_RELU: return x > 0.0f ? x : 0.0f;
    case U_SCALE: return x * (float)arg;
    case U_EXP: return expf(x);
    case U_TANH: return tanhf(x);
    case U_SIGMOID:
      if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
      else { float e = expf(x); return e / (1.0f + e); }
    case U_GELU_TANH: {
      float s, r;
      gelu_sigmoids(x, &s, &r);
      return x * s;
    }
  }
  return (float)unary_double(op, (double)x, arg);
}

__device__ inline double unary_acc(int op, double x, double arg) { return unary_double(op, x, arg); }
__device__ inline float unary_acc(int op, float x, double arg) { return unary_float(op, x, arg); }

template <class T>
__device__ void unary_impl(T* dst, const Layout& dl, const T* src, const Layout& sl, long long n, int op, double arg) {
  GRID_STRIDE(i, n) {
    typename Elem<T>::acc x = Elem<T>::load(src, layout_offset(sl, i));
    Elem<T>::store(dst, layout_offset(dl, i), unary_acc(op, x, arg));
  }
}
#define UNARY(sfx, T)                                                                                    \
  extern "C" __global__ void unary_##sfx(T* dst, Layout dl, const T* src, Layout sl, long long n, int op, \
                                          double arg) {                                                   \
    unary_impl<T>(dst, dl, src, sl, n, op, arg);                                                         \
  }
FOR_ALL_TYPES(UNARY)

// ---- UnaryGrad: dx = dy·op'(x, y), contiguous ----

// deriv_double is kernels.UnaryDeriv.
__device__ inline double deriv_double(int op, double x, double y, double arg) {
  switch (op) {
    case U_NEG: return -1.0;
    case U_ABS: return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    case U_EXP: return y;
    case U_LOG: return 1.0 / x;
    case U_SQRT: return 0.5 / y;
    case U_RSQRT: return -0.5 * y * y * y;
    case U_TANH: return 1.0 - y * y;
    case U_SIGMOID: return y * (1.0 - y);
    case U_RELU: return y > 0 ? 1.0 : 0.0;
    case U_GELU_TANH: {
      double u = SQRT_2_OVER_PI * (x + GELU_C * x * x * x);
      double t = tanh(u);
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_C * x * x);
    }
    case U_GELU_ERF: return 0.5 * (1.0 + erf(x * INV_SQRT2)) + x * INV_SQRT_2PI * exp(-0.5 * x * x);
    case U_POW: return arg == 0 ? 0.0 : arg * pow(x, arg - 1.0);
    case U_SCALE: return arg;
    case U_ADD_SCALAR: return 1.0;
  }
  return 0.0;
}

// grad_double is kernels.UnaryGrad for float64.
__device__ inline double grad_acc(int op, double dy, double x, double y, double arg) {
  switch (op) {
    case U_NEG: return -dy;
    case U_RELU: return y > 0 ? dy : 0.0;
    case U_ADD_SCALAR: return dy;
    case U_SCALE: return dy * arg;
    case U_EXP: return dy * y;
  }
  return dy * deriv_double(op, x, y, arg);
}

// grad_acc for float follows kernels.UnaryGrad for float32: the ops it
// computes in float32 here in float, the rest in double rounded once.
__device__ inline float grad_acc(int op, float dy, float x, float y, double arg) {
  switch (op) {
    case U_NEG: return -dy;
    case U_RELU: return y > 0.0f ? dy : 0.0f;
    case U_ADD_SCALAR: return dy;
    case U_SCALE: return dy * (float)arg;
    case U_EXP: return dy * y;
    case U_TANH: return dy * ((1.0f - y) * (1.0f + y));
    case U_SIGMOID: return dy * (y * (1.0f - y));
    case U_GELU_TANH: {
      float s, r;
      gelu_sigmoids(x, &s, &r);
      float dw = 2.0f * (float)SQRT_2_OVER_PI * (1.0f + 3.0f * (float)GELU_C * x * x);
      return dy * (s + x * s * r * dw);
    }
  }
  return (float)((double)dy * deriv_double(op, (double)x, (double)y, arg));
}

template <class T>
__device__ void unary_grad_impl(T* dx, const T* dy, const T* x, const T* y, long long n, int op, double arg) {
  typedef typename Elem<T>::acc A;
  GRID_STRIDE(i, n) {
    A xv = x ? Elem<T>::load(x, i) : (A)0;
    A yv = y ? Elem<T>::load(y, i) : (A)0;
    Elem<T>::store(dx, i, grad_acc(op, Elem<T>::load(dy, i), xv, yv, arg));
  }
}
#define UNARY_GRAD(sfx, T)                                                                         \
  extern "C" __global__ void unary_grad_##sfx(T* dx, const T* dy, const T* x, const T* y, long long n, \
                                               int op, double arg) {                                 \
    unary_grad_impl<T>(dx, dy, x, y, n, op, arg);                                                    \
  }
FOR_FLOAT_TYPES(UNARY_GRAD)

// ---- Binary: op codes in the order of device.BinaryOp ----

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE };

// binary_acc is kernels.Binary's scalar function: Maximum and Minimum
// return a NaN first operand, else the larger (smaller) one, else b.
template <class A> __device__ inline A binary_acc(int op, A x, A y) {
  switch (op) {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    case B_DIV: return x / y;
    case B_MAX: return (x != x || x > y) ? x : y;
    case B_MIN: return (x != x || x < y) ? x : y;
    case B_EQ: return x == y ? (A)1 : (A)0;
    case B_NE: return x != y ? (A)1 : (A)0;
    case B_LT: return x < y ? (A)1 : (A)0;
    case B_LE: return x <= y ? (A)1 : (A)0;
    case B_GT: return x > y ? (A)1 : (A)0;
    case B_GE: return x >= y ? (A)1 : (A)0;
  }
  return x;
}

template <class T>
__device__ void binary_impl(T* dst, const Layout& dl, const T* a, const Layout& al, const T* b, const Layout& bl,
                            long long n, int op) {
  GRID_STRIDE(i, n) {
    typename Elem<T>::acc x = Elem<T>::load(a, layout_offset(al, i));
    typename Elem<T>::acc y = Elem<T>::load(b, layout_offset(bl, i));
    Elem<T>::store(dst, layout_offset(dl, i), binary_acc(op, x, y));
  }
}
#define BINARY(sfx, T)                                                                                 \
  extern "C" __global__ void binary_##sfx(T* dst, Layout dl, const T* a, Layout al, const T* b, Layout bl, \
                                           long long n, int op) {                                        \
    binary_impl<T>(dst, dl, a, al, b, bl, n, op);                                                      \
  }
FOR_ALL_TYPES(BINARY)

// binary_mixed is Binary over operands of other dtypes than dst's (autocast
// and backward mix floats, an F32 residual plus a BF16 output; integers
// mix with integers): each is read by its dtype code and converted to
// dst's accumulator, as the cpu converts them to dst's compute dtype.
template <class T>
__device__ void binary_mixed_impl(T* dst, const Layout& dl, const void* a, int at, const Layout& al, const void* b,
                                  int bt, const Layout& bl, long long n, int op) {
  typedef typename Elem<T>::acc A;
  GRID_STRIDE(i, n) {
    A x = (A)load_dyn(a, at, layout_offset(al, i)), y = (A)load_dyn(b, bt, layout_offset(bl, i));
    Elem<T>::store(dst, layout_offset(dl, i), binary_acc(op, x, y));
  }
}
#define BINARY_MIXED(sfx, T)                                                                                   \
  extern "C" __global__ void binary_mixed_##sfx(T* dst, Layout dl, const void* a, int at, Layout al, const void* b, \
                                                 int bt, Layout bl, long long n, int op) {                       \
    binary_mixed_impl<T>(dst, dl, a, at, al, b, bt, bl, n, op);                                                  \
  }
FOR_ALL_TYPES(BINARY_MIXED)

// ---- Axpy: y += alpha·x (x strided, y contiguous) ----

template <class T> __device__ void axpy_impl(const T* x, const Layout& xl, T* y, long long n, double alpha) {
  typedef typename Elem<T>::acc A;
  A a = (A)alpha;
  GRID_STRIDE(i, n) Elem<T>::store(y, i, Elem<T>::load(y, i) + a * Elem<T>::load(x, layout_offset(xl, i)));
}
#define AXPY(sfx, T)                                                                                 \
  extern "C" __global__ void axpy_##sfx(const T* x, Layout xl, T* y, long long n, double alpha) {     \
    axpy_impl<T>(x, xl, y, n, alpha);                                                                \
  }
FOR_FLOAT_TYPES(AXPY)

// ---- Where: dst = cond ≠ 0 ? a : b, cond of any dtype (a run-time code) ----

template <class T>
__device__ void where_impl(T* dst, const Layout& dl, const void* cond, int ct, const Layout& cl, const T* a,
                           const Layout& al, const T* b, const Layout& bl, long long n) {
  GRID_STRIDE(i, n) {
    bool take = load_dyn(cond, ct, layout_offset(cl, i)) != 0.0;
    typename Elem<T>::acc v = take ? Elem<T>::load(a, layout_offset(al, i)) : Elem<T>::load(b, layout_offset(bl, i));
    Elem<T>::store(dst, layout_offset(dl, i), v);
  }
}
#define WHERE(sfx, T)                                                                                  \
  extern "C" __global__ void where_##sfx(T* dst, Layout dl, const void* cond, int ct, Layout cl, const T* a, \
                                          Layout al, const T* b, Layout bl, long long n) {              \
    where_impl<T>(dst, dl, cond, ct, cl, a, al, b, bl, n);                                             \
  }
FOR_ALL_TYPES(WHERE)
