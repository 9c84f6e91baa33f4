// Batch normalisation and its gradient, per channel of x (n, c, hw), dense.
//
// batchnorm_T: one block per channel (blocks stride over channels); the
// block's threads stride over the channel's n·hw values. In training the
// mean and the biased variance accumulate in double (two passes, fixed-order
// block reductions: deterministic) and thread 0 moves the running statistics
// towards the batch mean and the unbiased variance, as the cpu does:
// run = (1-momentum)·run + momentum·stat in double, rounded to the compute
// type (no fused products). In eval the running statistics are used. y is
// computed in double from the unrounded statistics; mean and invstd (S, the
// compute type) store the statistics used. With relu set, each y is
// max(0, y) (+0 for NaN) before it is stored: BatchNormRelu's one pass.
//
// batchnorm_grad_T: one block per channel: sg = Σ dy and
// sgx = invstd·Σ dy·(x − mean) (when training or dw or db is wanted),
// dw = sgx, db = sg (overwritten, either may be null), and
// dx = k·dy + (b·(x − mean) + c) in training (k = invstd·w,
// b = −k·invstd·sgx/m, c = −k·sg/m) or dx = k·dy in eval.
//
// The per-channel operands (w, b, running statistics, dw, db) are void
// pointers with a dtype code (any float dtype; F64 only with F64 x).
#include "common.cuh"

// bn_store rounds v to the compute type A of the call, then stores it in
// element i of a per-channel operand of dtype code dt.
template<class A>
__device__ void bn_store(void* p, int dt, long long i, double v) {
	A r = (A)v;
	switch (dt) {
		case DT_F64: ((double*)p)[i] = (double)r; return;
		case DT_F32: ((float*)p)[i] = (float)r; return;
		case DT_F16: ((half16*)p)[i].bits = f32_to_f16((float)r); return;
		case DT_BF16: ((bfloat16*)p)[i].bits = f32_to_bf16((float)r); return;
	}
}

template<class T, class S>
__device__ void batchnorm_impl(T* y, S* mean, S* invstd, const T* x, const void* w, int wdt, const void* b, int bdt,
		void* rm, int rmdt, void* rv, int rvdt, long long n, long long c, long long hw, int training,
		double momentum, double eps, int relu) {
	typedef typename Elem<T>::acc A;
	long long m = n * hw;
	for (long long ch = blockIdx.x; ch < c; ch += gridDim.x) {
		double mu, v;
		if (training) {
			double s = 0;
			for (long long e = threadIdx.x; e < m; e += blockDim.x) {
				long long i = e / hw, j = e - i * hw;
				s += (double)Elem<T>::load(x, (i * c + ch) * hw + j);
			}
			mu = block_sum(s) / (double)m;
			double q = 0;
			for (long long e = threadIdx.x; e < m; e += blockDim.x) {
				long long i = e / hw, j = e - i * hw;
				double d = (double)Elem<T>::load(x, (i * c + ch) * hw + j) - mu;
				q += dmul_rn(d, d);
			}
			double ss = block_sum(q);
			v = ss / (double)m;
			if (threadIdx.x == 0) {
				if (rm) {
					double r = dmul_rn(1 - momentum, load_dyn(rm, rmdt, ch)) + dmul_rn(momentum, mu);
					bn_store<A>(rm, rmdt, ch, r);
				}
				if (rv) {
					double unbiased = __longlong_as_double(0x7ff0000000000000LL);
					if (m > 1) unbiased = ss / (double)(m - 1);
					double r = dmul_rn(1 - momentum, load_dyn(rv, rvdt, ch)) + dmul_rn(momentum, unbiased);
					bn_store<A>(rv, rvdt, ch, r);
				}
			}
		} else {
			mu = load_dyn(rm, rmdt, ch);
			v = load_dyn(rv, rvdt, ch);
		}
		double is = 1.0 / sqrt(v + eps);
		double scale = is, shift = -mu * is;
		if (w) {
			double wv = load_dyn(w, wdt, ch);
			scale *= wv;
			shift *= wv;
		}
		if (b) shift += load_dyn(b, bdt, ch);
		for (long long e = threadIdx.x; e < m; e += blockDim.x) {
			long long i = e / hw, j = e - i * hw;
			long long o = (i * c + ch) * hw + j;
			A r = (A)(dmul_rn((double)Elem<T>::load(x, o), scale) + shift);
			if (relu && !(r > (A)0)) r = (A)0;
			Elem<T>::store(y, o, r);
		}
		if (threadIdx.x == 0) {
			Elem<S>::store(mean, ch, (typename Elem<S>::acc)mu);
			Elem<S>::store(invstd, ch, (typename Elem<S>::acc)is);
		}
		__syncthreads();
	}
}

template<class T, class S>
__device__ void batchnorm_grad_impl(T* dx, void* dw, int dwdt, void* db, int dbdt, const T* dy, const T* x,
		const void* w, int wdt, const S* mean, const S* invstd, long long n, long long c, long long hw, int training) {
	typedef typename Elem<T>::acc A;
	long long m = n * hw;
	for (long long ch = blockIdx.x; ch < c; ch += gridDim.x) {
		double mu = (double)Elem<S>::load(mean, ch), is = (double)Elem<S>::load(invstd, ch);
		double sg = 0, sgx = 0;
		if (training || dw || db) {
			double a = 0, ax = 0;
			for (long long e = threadIdx.x; e < m; e += blockDim.x) {
				long long i = e / hw, j = e - i * hw;
				long long o = (i * c + ch) * hw + j;
				double g = (double)Elem<T>::load(dy, o);
				a += g;
				if (x) ax += dmul_rn(g, (double)Elem<T>::load(x, o) - mu);
			}
			sg = block_sum(a);
			sgx = block_sum(ax) * is;
		}
		if (threadIdx.x == 0) {
			if (dw) bn_store<A>(dw, dwdt, ch, sgx);
			if (db) bn_store<A>(db, dbdt, ch, sg);
		}
		if (dx) {
			double k = is;
			if (w) k *= load_dyn(w, wdt, ch);
			double md = (double)m;
			double bb = -k * is * sgx / md, cc = -k * sg / md;
			for (long long e = threadIdx.x; e < m; e += blockDim.x) {
				long long i = e / hw, j = e - i * hw;
				long long o = (i * c + ch) * hw + j;
				double g = (double)Elem<T>::load(dy, o);
				double r;
				if (training)
					r = dmul_rn(k, g) + (dmul_rn(bb, (double)Elem<T>::load(x, o) - mu) + cc);
				else
					r = dmul_rn(g, k) + 0.0;
				Elem<T>::store(dx, o, (A)r);
			}
		}
		__syncthreads();
	}
}

#define BATCHNORM(SUF, T, S) \
	extern "C" __global__ void batchnorm_##SUF(T* y, S* mean, S* invstd, const T* x, const void* w, int wdt, \
			const void* b, int bdt, void* rm, int rmdt, void* rv, int rvdt, long long n, long long c, long long hw, \
			int training, double momentum, double eps, int relu) { \
		batchnorm_impl<T, S>(y, mean, invstd, x, w, wdt, b, bdt, rm, rmdt, rv, rvdt, n, c, hw, training, momentum, eps, relu); } \
	extern "C" __global__ void batchnorm_grad_##SUF(T* dx, void* dw, int dwdt, void* db, int dbdt, const T* dy, \
			const T* x, const void* w, int wdt, const S* mean, const S* invstd, long long n, long long c, long long hw, \
			int training) { \
		batchnorm_grad_impl<T, S>(dx, dw, dwdt, db, dbdt, dy, x, w, wdt, mean, invstd, n, c, hw, training); }
// Statistics in the compute dtype.
BATCHNORM(f64, double, double)
BATCHNORM(f32, float, float)
BATCHNORM(f16, half16, float)
BATCHNORM(bf16, bfloat16, float)
