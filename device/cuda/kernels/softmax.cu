// Softmax and log-softmax along rows, with their gradients.
//
// One block per row (blocks stride over rows when there are more rows than
// blocks). Row sums accumulate in double, as on the cpu; the elementwise
// exponentials are computed in the compute type (double for F64, float
// otherwise). A row whose maximum is NaN or -Inf gives NaN, as on the cpu.
#include "common.cuh"

template<class T>
__device__ void softmax_rows(T* dst, const T* src, long long rows, long long cols, int lg) {
	typedef typename Elem<T>::acc A;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const T* x = src + r * cols;
		T* y = dst + r * cols;
		A m = row_max(x, cols);
		double s = 0;
		for (long long j = threadIdx.x; j < cols; j += blockDim.x)
			s += (double)exp_acc(Elem<T>::load(x, j) - m);
		s = block_sum(s);
		if (lg) {
			double c = (double)m + log(s);
			for (long long j = threadIdx.x; j < cols; j += blockDim.x)
				Elem<T>::store(y, j, (A)((double)Elem<T>::load(x, j) - c));
		} else {
			A inv = (A)(1.0 / s);
			for (long long j = threadIdx.x; j < cols; j += blockDim.x)
				Elem<T>::store(y, j, exp_acc(Elem<T>::load(x, j) - m) * inv);
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
		s = block_sum(s);
		for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
			double gv = (double)Elem<T>::load(g, j);
			A ov = Elem<T>::load(o, j);
			double v = lg ? gv - (double)exp_acc(ov) * s : (double)ov * (gv - s);
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
