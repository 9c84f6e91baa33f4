// optim.cu: AdamStep and SGDStep, elementwise over contiguous operands.
//
// As package kernels' AdamUpdate and SGDUpdate: each element is computed in
// double and rounded once to the parameter's dtype (F32 or F64); the
// gradient may be F16 or BF16 for an F32 parameter (read exactly as float).
// The scalar factors that do not depend on the element (Adam's step size
// lr/(1−β1^t) and √(1−β2^t), the decoupled decay 1 − lr·λ) are computed by
// the Go adapter, as the cpu device computes them, and passed in.
#include "common.cuh"

template <class P, class G>
__device__ void adam_impl(P* p, const G* g, P* m, P* v, long long n, double step_size, double bc2, double b1,
                          double b2, double eps, double decay, double coupled) {
  GRID_STRIDE(i, n) {
    double pi = (double)p[i] * decay;
    double gi = (double)Elem<G>::load(g, i) + coupled * pi;
    double mi = b1 * (double)m[i] + (1.0 - b1) * gi;
    double vi = b2 * (double)v[i] + (1.0 - b2) * gi * gi;
    m[i] = (P)mi;
    v[i] = (P)vi;
    p[i] = (P)(pi - step_size * mi / (sqrt(vi) / bc2 + eps));
  }
}

template <class P, class G>
__device__ void sgd_impl(P* p, const G* g, P* buf, long long n, double lr, double mu, double damp, double wd,
                         int nesterov, int first) {
  GRID_STRIDE(i, n) {
    double pi = (double)p[i];
    double gi = (double)Elem<G>::load(g, i) + wd * pi;
    double d = gi;
    if (mu != 0.0) {
      double b = first ? gi : mu * (double)buf[i] + (1.0 - damp) * gi;
      buf[i] = (P)b;
      d = nesterov ? gi + mu * b : b;
    }
    p[i] = (P)(pi - lr * d);
  }
}

#define OPTIM(ps, P, gs, G)                                                                                \
  extern "C" __global__ void adam_##ps##_##gs(P* p, const G* g, P* m, P* v, long long n, double step_size,  \
                                               double bc2, double b1, double b2, double eps, double decay,   \
                                               double coupled) {                                            \
    adam_impl<P, G>(p, g, m, v, n, step_size, bc2, b1, b2, eps, decay, coupled);                           \
  }                                                                                                         \
  extern "C" __global__ void sgd_##ps##_##gs(P* p, const G* g, P* buf, long long n, double lr, double mu,   \
                                              double damp, double wd, int nesterov, int first) {            \
    sgd_impl<P, G>(p, g, buf, n, lr, mu, damp, wd, nesterov, first);                                       \
  }
OPTIM(f64, double, f64, double)
OPTIM(f32, float, f32, float)
OPTIM(f32, float, f16, half16)
OPTIM(f32, float, bf16, bfloat16)
