// Cross entropy with integer targets, ignore index and label smoothing.
//
// cross_entropy_T_S_I: one block per row (blocks stride over rows): the
// row's maximum, Σ exp(z − max) and Σ z in double, lse = max + log Σ, and
// loss = lse − (1−ε)·z[t] − ε·mean(z), 0 where t == ignore. loss and lse
// have dtype S (the compute dtype, or T), targets dtype I. A target outside
// [0, cols) that is not ignore gives a NaN loss (callers validate targets
// first; the cpu panics).
//
// cross_entropy_grad_T_S_I: one thread per logit (grid-stride):
// dz = dloss[r]·(exp(z − lse[r]) − ε/cols − (1−ε)·[j == t]), 0 on ignored
// rows.
#include "common.cuh"

template<class T, class S, class I>
__device__ void cross_entropy_rows(S* loss, S* lse, const T* logits, const I* target,
		long long rows, long long cols, long long ignore, double smoothing) {
	typedef typename Elem<T>::acc A;
	typedef typename Elem<S>::acc SA;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const T* z = logits + r * cols;
		A m = row_max(z, cols);
		double s = 0, sz = 0;
		for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
			A v = Elem<T>::load(z, j);
			s += (double)exp_acc(v - m);
			sz += (double)v;
		}
		s = block_sum(s);
		sz = block_sum(sz);
		if (threadIdx.x == 0) {
			double l = (double)m + log(s);
			Elem<S>::store(lse, r, (SA)l);
			long long t = (long long)target[r];
			double out;
			if (t == ignore)
				out = 0;
			else if (t < 0 || t >= cols)
				out = __longlong_as_double(0x7ff8000000000000LL);
			else
				out = l - (1 - smoothing) * (double)Elem<T>::load(z, t) - smoothing * sz / (double)cols;
			Elem<S>::store(loss, r, (SA)out);
		}
	}
}

template<class T, class S, class I>
__device__ void cross_entropy_grad_elems(T* dlogits, const S* dloss, const T* logits, const S* lse, const I* target,
		long long rows, long long cols, long long ignore, double smoothing) {
	typedef typename Elem<T>::acc A;
	double u = smoothing / (double)cols;
	long long n = rows * cols;
	for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
		long long r = e / cols, j = e % cols;
		long long t = (long long)target[r];
		double d = 0;
		if (t != ignore) {
			double g = (double)Elem<S>::load(dloss, r);
			A l = (A)Elem<S>::load(lse, r);
			double p = (double)exp_acc(Elem<T>::load(logits, e) - l) - u;
			if (j == t) p -= 1 - smoothing;
			if (t < 0 || t >= cols) p = __longlong_as_double(0x7ff8000000000000LL);
			d = g * p;
		}
		Elem<T>::store(dlogits, e, (A)d);
	}
}

#define CROSS_ENTROPY_I(SUF, T, S, ISUF, I) \
	extern "C" __global__ void cross_entropy_##SUF##_##ISUF(S* loss, S* lse, const T* logits, const I* target, \
			long long rows, long long cols, long long ignore, double smoothing) { \
		cross_entropy_rows<T, S, I>(loss, lse, logits, target, rows, cols, ignore, smoothing); } \
	extern "C" __global__ void cross_entropy_grad_##SUF##_##ISUF(T* dlogits, const S* dloss, const T* logits, \
			const S* lse, const I* target, long long rows, long long cols, long long ignore, double smoothing) { \
		cross_entropy_grad_elems<T, S, I>(dlogits, dloss, logits, lse, target, rows, cols, ignore, smoothing); }
#define CROSS_ENTROPY(SUF, T, S) \
	CROSS_ENTROPY_I(SUF, T, S, i64, long long) \
	CROSS_ENTROPY_I(SUF, T, S, i32, int) \
	CROSS_ENTROPY_I(SUF, T, S, i8, signed char)
// loss and lse in the compute dtype, or in the logits' own dtype.
CROSS_ENTROPY(f64_f64, double, double)
CROSS_ENTROPY(f32_f32, float, float)
CROSS_ENTROPY(f16_f32, half16, float)
CROSS_ENTROPY(bf16_f32, bfloat16, float)
CROSS_ENTROPY(f16_f16, half16, half16)
CROSS_ENTROPY(bf16_bf16, bfloat16, bfloat16)
