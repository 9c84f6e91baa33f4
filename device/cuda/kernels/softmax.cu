// Softmax and log-softmax along rows, with their gradients.
//
// One block per row (blocks stride over rows when there are more rows than
// blocks). Row sums accumulate in double, as on the cpu; the elementwise
// exponentials are computed in the compute type (double for F64, float
// otherwise). A row whose maximum is NaN or -Inf gives NaN, as on the cpu.
#include "common.cuh"

// SmMaxOp combines two values keeping a NaN (as the cpu's rowMax does).
struct SmMaxOp {
	template <class A> __device__ A operator()(A a, A b) const { return (a > b || a != a) ? a : b; }
};

// sm_sum returns Σ v over the block (fixed order), to every thread.
static __device__ double sm_sum(double v) {
	__shared__ double red[32];
	return block_reduce(v, SumOp(), red);
}

// sm_row_max returns the largest of x[0..n) (NaN if one is NaN, −∞ when
// empty) to every thread of the block.
template <class T> static __device__ typename Elem<T>::acc sm_row_max(const T* x, long long n) {
	typedef typename Elem<T>::acc A;
	__shared__ A red[32];
	A m = (A)__longlong_as_double(0xfff0000000000000LL);
	for (long long j = threadIdx.x; j < n; j += blockDim.x) m = SmMaxOp()(m, Elem<T>::load(x, j));
	return block_reduce(m, SmMaxOp(), red);
}

// sm_exp is exp in the compute type.
static __device__ float sm_exp(float x) { return expf(x); }
static __device__ double sm_exp(double x) { return exp(x); }

template<class T>
__device__ void softmax_rows(T* dst, const T* src, long long rows, long long cols, int lg) {
	typedef typename Elem<T>::acc A;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const T* x = src + r * cols;
		T* y = dst + r * cols;
		A m = sm_row_max(x, cols);
		double s = 0;
		for (long long j = threadIdx.x; j < cols; j += blockDim.x)
			s += (double)sm_exp(Elem<T>::load(x, j) - m);
		s = sm_sum(s);
		if (lg) {
			double c = (double)m + log(s);
			for (long long j = threadIdx.x; j < cols; j += blockDim.x)
				Elem<T>::store(y, j, (A)((double)Elem<T>::load(x, j) - c));
		} else {
			A inv = (A)(1.0 / s);
			for (long long j = threadIdx.x; j < cols; j += blockDim.x)
				Elem<T>::store(y, j, sm_exp(Elem<T>::load(x, j) - m) * inv);
		}
	}
}

// softmax: dx = y·(dy − Σ dy·y); log-softmax: dx = dy − exp(y)·Σ dy.
template<class T>
__device__ void softmax_grad_rows(T* dx, const T* dy, const T* y, long long rows, long long cols, int lg) {
	typedef typename Elem<T>::acc A;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const T* g = dy + r * cols;
		const T* o = y + r * cols;
		T* d = dx + r * cols;
		double s = 0;
		for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
			double gv = (double)Elem<T>::load(g, j);
			s += lg ? gv : gv * (double)Elem<T>::load(o, j);
		}
		s = sm_sum(s);
		for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
			double gv = (double)Elem<T>::load(g, j);
			A ov = Elem<T>::load(o, j);
			double v = lg ? gv - (double)sm_exp(ov) * s : (double)ov * (gv - s);
			Elem<T>::store(d, j, (A)v);
		}
	}
}

#define SOFTMAX(SUF, T) \
	extern "C" __global__ void softmax_##SUF(T* dst, const T* src, long long rows, long long cols, int lg) { \
		softmax_rows<T>(dst, src, rows, cols, lg); } \
	extern "C" __global__ void softmax_grad_##SUF(T* dx, const T* dy, const T* y, long long rows, long long cols, int lg) { \
		softmax_grad_rows<T>(dx, dy, y, rows, cols, lg); }
FOR_FLOAT_TYPES(SOFTMAX)
