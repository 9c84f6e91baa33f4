// im2col and col2im for the convolutions of conv.go, whose GEMMs run on
// cuBLAS.
//
// conv_im2col_T: col (Cg·R·S, OH·OW) of one sample's one group of x
// (Cg, H, W): col[(c·R + r)·S + s][oh·OW + ow] =
// x[c][oh·sh − ph + r·dh][ow·sw − pw + s·dw], 0 outside the image. One
// thread per col element (grid-stride).
//
// conv_col2im_T: dx (Cg, H, W) = the sum of the col elements that im2col
// would have read from each position. Each dx element is summed by one
// thread, over r then s, in the compute dtype (double for f64, else float),
// and overwritten: no atomics, the same bits on every launch.
// conv_col2im_wide_T (T f16 or bf16) is conv_col2im_T from an F32 col:
// the 16-bit input gradient's GEMM writes its products in F32, so dx is
// rounded once, as the cpu rounds it.
#include "common.cuh"

template<class T>
__device__ void conv_im2col_impl(T* col, const T* x, long long cg, long long h, long long w, long long r, long long s,
		long long sh, long long sw, long long ph, long long pw, long long dh, long long dw, long long oh, long long ow) {
	long long p = oh * ow, n = cg * r * s * p;
	GRID_STRIDE(i, n) {
		long long q = i % p, row = i / p;
		long long oy = q / ow, ox = q % ow;
		long long ks = row % s, kr = (row / s) % r, c = row / (s * r);
		long long iy = oy * sh - ph + kr * dh, ix = ox * sw - pw + ks * dw;
		if (iy >= 0 && iy < h && ix >= 0 && ix < w)
			col[i] = x[(c * h + iy) * w + ix];
		else
			Elem<T>::store(col, i, (typename Elem<T>::acc)0);
	}
}

template<class T, class C>
__device__ void conv_col2im_impl(T* dx, const C* col, long long cg, long long h, long long w, long long r, long long s,
		long long sh, long long sw, long long ph, long long pw, long long dh, long long dw, long long oh, long long ow) {
	typedef typename Elem<T>::acc A;
	long long p = oh * ow, n = cg * h * w;
	GRID_STRIDE(i, n) {
		long long ix = i % w, iy = (i / w) % h, c = i / (w * h);
		A acc = 0;
		for (long long kr = 0; kr < r; kr++) {
			long long ty = iy + ph - kr * dh;
			if (ty < 0 || ty % sh != 0) continue;
			long long oy = ty / sh;
			if (oy >= oh) continue;
			for (long long ks = 0; ks < s; ks++) {
				long long tx = ix + pw - ks * dw;
				if (tx < 0 || tx % sw != 0) continue;
				long long ox = tx / sw;
				if (ox >= ow) continue;
				acc += (A)Elem<C>::load(col, ((c * r + kr) * s + ks) * p + oy * ow + ox);
			}
		}
		Elem<T>::store(dx, i, acc);
	}
}

#define CONV_ARGS long long cg, long long h, long long w, long long r, long long s, long long sh, long long sw, \
		long long ph, long long pw, long long dh, long long dw, long long oh, long long ow
#define CONV_PASS cg, h, w, r, s, sh, sw, ph, pw, dh, dw, oh, ow

#define CONV(sfx, T)                                                                         \
  extern "C" __global__ void conv_im2col_##sfx(T* col, const T* x, CONV_ARGS) {             \
    conv_im2col_impl<T>(col, x, CONV_PASS);                                                  \
  }                                                                                          \
  extern "C" __global__ void conv_col2im_##sfx(T* dx, const T* col, CONV_ARGS) {            \
    conv_col2im_impl<T, T>(dx, col, CONV_PASS);                                              \
  }
FOR_FLOAT_TYPES(CONV)

#define CONV_WIDE(sfx, T)                                                                    \
  extern "C" __global__ void conv_col2im_wide_##sfx(T* dx, const float* col, CONV_ARGS) {   \
    conv_col2im_impl<T, float>(dx, col, CONV_PASS);                                          \
  }
CONV_WIDE(f16, half16)
CONV_WIDE(bf16, bfloat16)
