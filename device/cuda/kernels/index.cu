// Indexing along the middle dimension of (outer, n, inner) views.
//
// index_select_W_I and gather_W_I copy elements bit for bit, W being the
// element's width (b8, b16, b32, b64), so they serve every dtype; one thread
// per output element (grid-stride). An index outside [0, n) writes zero
// bits (callers validate indices first; the cpu panics).
//
// index_add_T_I and scatter_add_T_I accumulate deterministically, in the
// cpu's order, without atomics: the destination rows are split into P
// buckets (row mod P, P = IDX_BUCKETS·gridDim.y) and each thread owns one
// column of one bucket, scanning the indices in order and adding the source
// rows that fall in its bucket. Every destination element is then written by
// one thread, in index order. A block is 32 columns × IDX_BUCKETS buckets;
// blocks stride over (outer, column tile) on x. 16-bit destinations are
// rounded after each addition (the cpu rounds once, after all of them).
// Out-of-range indices are skipped.
#include "common.cuh"

#define IDX_BUCKETS 8

template<class W, class I>
__device__ void index_select_elems(W* dst, const W* src, const I* idx, long long outer, long long n, long long m,
		long long inner) {
	long long total = outer * m * inner;
	for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
		long long i = e % inner, j = (e / inner) % m, o = e / (inner * m);
		long long x = (long long)idx[j];
		dst[e] = (x >= 0 && x < n) ? src[(o * n + x) * inner + i] : (W)0;
	}
}

template<class W, class I>
__device__ void gather_elems(W* dst, const W* src, const I* idx, long long outer, long long n, long long m,
		long long inner) {
	long long total = outer * m * inner;
	for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
		long long i = e % inner, o = e / (inner * m);
		long long x = (long long)idx[e];
		dst[e] = (x >= 0 && x < n) ? src[(o * n + x) * inner + i] : (W)0;
	}
}

// scatter is false for index_add (one index per source row: idx[j]) and
// true for scatter_add (one index per source element: idx[o, j, i]).
template<class T, class I>
__device__ void add_rows(T* dst, const I* idx, const T* src, long long outer, long long n, long long m, long long inner,
		bool scatter) {
	typedef typename Elem<T>::acc A;
	long long P = (long long)IDX_BUCKETS * gridDim.y;
	long long p = (long long)blockIdx.y * IDX_BUCKETS + threadIdx.y;
	long long tiles = (inner + 31) / 32;
	for (long long u = blockIdx.x; u < outer * tiles; u += gridDim.x) {
		long long o = u / tiles, i = (u % tiles) * 32 + threadIdx.x;
		if (i >= inner || p >= n)
			continue;
		for (long long j = 0; j < m; j++) {
			long long s = (o * m + j) * inner + i;
			long long x = (long long)(scatter ? idx[s] : idx[j]);
			if (x < 0 || x >= n || x % P != p)
				continue;
			long long d = (o * n + x) * inner + i;
			Elem<T>::store(dst, d, Elem<T>::load(dst, d) + Elem<T>::load(src, s));
		}
	}
}

#define INDEX_COPY_I(WSUF, W, ISUF, I) \
	extern "C" __global__ void index_select_##WSUF##_##ISUF(W* dst, const W* src, const I* idx, long long outer, \
			long long n, long long m, long long inner) { \
		index_select_elems<W, I>(dst, src, idx, outer, n, m, inner); } \
	extern "C" __global__ void gather_##WSUF##_##ISUF(W* dst, const W* src, const I* idx, long long outer, \
			long long n, long long m, long long inner) { \
		gather_elems<W, I>(dst, src, idx, outer, n, m, inner); }
#define INDEX_ADD_I(SUF, T, ISUF, I) \
	extern "C" __global__ void index_add_##SUF##_##ISUF(T* dst, const I* idx, const T* src, long long outer, \
			long long n, long long m, long long inner) { \
		add_rows<T, I>(dst, idx, src, outer, n, m, inner, false); } \
	extern "C" __global__ void scatter_add_##SUF##_##ISUF(T* dst, const I* idx, const T* src, long long outer, \
			long long n, long long m, long long inner) { \
		add_rows<T, I>(dst, idx, src, outer, n, m, inner, true); }
#define INDEX_TYPES(X, SUF, T) X(SUF, T, i64, long long) X(SUF, T, i32, int) X(SUF, T, i8, signed char)
INDEX_TYPES(INDEX_COPY_I, b8, unsigned char)
INDEX_TYPES(INDEX_COPY_I, b16, unsigned short)
INDEX_TYPES(INDEX_COPY_I, b32, unsigned int)
INDEX_TYPES(INDEX_COPY_I, b64, unsigned long long)
INDEX_TYPES(INDEX_ADD_I, f64, double)
INDEX_TYPES(INDEX_ADD_I, f32, float)
INDEX_TYPES(INDEX_ADD_I, f16, half16)
INDEX_TYPES(INDEX_ADD_I, bf16, bfloat16)
