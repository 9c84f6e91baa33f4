// Layer normalisation and its gradient.
//
// layer_norm_T_S: one block per row (blocks stride over rows). The mean and
// the biased variance accumulate in double (two passes, as on the cpu); y is
// computed in double from the unrounded statistics, which are then stored in
// S (the compute dtype, or T itself). w and b may be null (weight 1, bias 0).
//
// layer_norm_grad_dx_T_S: one block per row:
// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·w, x̂ = (x − mean)·rstd.
//
// layer_norm_grad_wb_T_S: dw = Σ_rows dy·x̂ and db = Σ_rows dy, overwritten
// (either may be null). A block of 32 × LN_LANES threads owns 32 columns;
// lane y sums the rows y, y+LN_LANES, … in double and the lanes' sums are
// added in lane order, so the result does not depend on the launch.
#include "common.cuh"

#define LN_LANES 16

template<class T, class S>
__device__ void layer_norm_rows(T* y, S* mean, S* rstd, const T* x, const T* w, const T* b,
		long long rows, long long cols, double eps) {
	typedef typename Elem<T>::acc A;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const T* xr = x + r * cols;
		T* yr = y + r * cols;
		double s = 0;
		for (long long j = threadIdx.x; j < cols; j += blockDim.x)
			s += (double)Elem<T>::load(xr, j);
		double mu = block_sum(s) / (double)cols;
		double q = 0;
		for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
			double dv = (double)Elem<T>::load(xr, j) - mu;
			q += dv * dv;
		}
		double is = 1.0 / sqrt(block_sum(q) / (double)cols + eps);
		for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
			double v = ((double)Elem<T>::load(xr, j) - mu) * is;
			if (w) v *= (double)Elem<T>::load(w, j);
			if (b) v += (double)Elem<T>::load(b, j);
			Elem<T>::store(yr, j, (A)v);
		}
		if (threadIdx.x == 0) {
			Elem<S>::store(mean, r, (typename Elem<S>::acc)mu);
			Elem<S>::store(rstd, r, (typename Elem<S>::acc)is);
		}
	}
}

template<class T, class S>
__device__ void layer_norm_grad_dx_rows(T* dx, const T* dy, const T* x, const T* w, const S* mean, const S* rstd,
		long long rows, long long cols) {
	typedef typename Elem<T>::acc A;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const T* g = dy + r * cols;
		const T* xr = x + r * cols;
		double mu = (double)Elem<S>::load(mean, r), is = (double)Elem<S>::load(rstd, r);
		double sg = 0, sgx = 0;
		for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
			double gv = (double)Elem<T>::load(g, j);
			if (w) gv *= (double)Elem<T>::load(w, j);
			sg += gv;
			sgx += gv * (((double)Elem<T>::load(xr, j) - mu) * is);
		}
		double mg = block_sum(sg) / (double)cols, mgx = block_sum(sgx) / (double)cols;
		for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
			double gv = (double)Elem<T>::load(g, j);
			if (w) gv *= (double)Elem<T>::load(w, j);
			double h = ((double)Elem<T>::load(xr, j) - mu) * is;
			Elem<T>::store(dx + r * cols, j, (A)(is * (gv - mg - h * mgx)));
		}
	}
}

// Launched with blockDim (32, LN_LANES); blocks stride over column tiles.
template<class T, class S>
__device__ void layer_norm_grad_wb_cols(T* dw, T* db, const T* dy, const T* x, const S* mean, const S* rstd,
		long long rows, long long cols) {
	typedef typename Elem<T>::acc A;
	__shared__ double sw[LN_LANES][33], sb[LN_LANES][33];
	int tx = threadIdx.x, ty = threadIdx.y;
	for (long long c0 = (long long)blockIdx.x * 32; c0 < cols; c0 += (long long)gridDim.x * 32) {
		long long j = c0 + tx;
		double aw = 0, ab = 0;
		if (j < cols) {
			for (long long r = ty; r < rows; r += LN_LANES) {
				double g = (double)Elem<T>::load(dy, r * cols + j);
				double h = ((double)Elem<T>::load(x, r * cols + j) - (double)Elem<S>::load(mean, r)) *
					(double)Elem<S>::load(rstd, r);
				aw += g * h;
				ab += g;
			}
		}
		sw[ty][tx] = aw;
		sb[ty][tx] = ab;
		__syncthreads();
		if (ty == 0 && j < cols) {
			double tw = 0, tb = 0;
			for (int l = 0; l < LN_LANES; l++) {
				tw += sw[l][tx];
				tb += sb[l][tx];
			}
			if (dw) Elem<T>::store(dw, j, (A)tw);
			if (db) Elem<T>::store(db, j, (A)tb);
		}
		__syncthreads();
	}
}

#define LAYER_NORM(SUF, T, S) \
	extern "C" __global__ void layer_norm_##SUF(T* y, S* mean, S* rstd, const T* x, const T* w, const T* b, \
			long long rows, long long cols, double eps) { \
		layer_norm_rows<T, S>(y, mean, rstd, x, w, b, rows, cols, eps); } \
	extern "C" __global__ void layer_norm_grad_dx_##SUF(T* dx, const T* dy, const T* x, const T* w, \
			const S* mean, const S* rstd, long long rows, long long cols) { \
		layer_norm_grad_dx_rows<T, S>(dx, dy, x, w, mean, rstd, rows, cols); } \
	extern "C" __global__ void layer_norm_grad_wb_##SUF(T* dw, T* db, const T* dy, const T* x, \
			const S* mean, const S* rstd, long long rows, long long cols) { \
		layer_norm_grad_wb_cols<T, S>(dw, db, dy, x, mean, rstd, rows, cols); }
// Statistics in the compute dtype, or in the input's own dtype.
LAYER_NORM(f64_f64, double, double)
LAYER_NORM(f32_f32, float, float)
LAYER_NORM(f16_f32, half16, float)
LAYER_NORM(bf16_f32, bfloat16, float)
LAYER_NORM(f16_f16, half16, half16)
LAYER_NORM(bf16_bf16, bfloat16, bfloat16)
