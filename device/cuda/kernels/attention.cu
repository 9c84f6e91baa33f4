// Fused scaled-dot-product attention, forward and backward, for q, k, v
// (B, H, T, D) contiguous: out_i = Σ_j softmax_j(scale·q_i·k_j)·v_j, keys
// j ≤ i only when causal, and lse_i = log Σ_j exp(scale·q_i·k_j) (B, H, T) in
// the compute type A (double for F64, float otherwise; 16-bit operands are
// read as 16-bit and computed in float). No T×T matrix exists: blocks work
// on TILE×TILE score tiles in shared memory. TILE (a launch parameter,
// ≤ 32) is chosen by the host so that the block's shared memory fits 48 KiB;
// attn_*_smem below give the bytes.
//
// attention_T: one block per (head, query tile), blocks striding over them.
// The block keeps its Q tile, the output accumulator O, and per row the
// running maximum m and sum l (double); for each key tile (only those
// holding keys ≤ the tile's last query when causal): S = scale·Q·Kᵀ, the new
// maximum, c = exp(m_old − m_new), P = exp(S − m_new) (0 for masked keys),
// l = l·c + Σ P, O = O·c + P·V. Finally out = O / l, lse = m + log l.
//
// attention_grad_kv_T: one block per (head, key tile) accumulates dK and dV
// over the query tiles that see it, recomputing P = exp(S − lse) and
// dS = P∘(dO·Vᵀ − δ), δ_i = dO_i·out_i: dV += Pᵀ·dO, dK += scale·dSᵀ·Q.
// attention_grad_q_T: one block per (head, query tile) accumulates
// dQ += scale·dS·K over its key tiles. Each gradient element is summed by
// one thread in a fixed order: no atomics, results independent of the
// launch. (S and dS are recomputed by both kernels: the price of that.)
#include "common.cuh"

// attn_neg_inf returns −∞ in A.
template<class A> __device__ A attn_neg_inf();
template<> __device__ float attn_neg_inf<float>() { return __int_as_float(0xff800000); }
template<> __device__ double attn_neg_inf<double>() { return __longlong_as_double(0xfff0000000000000LL); }

// attn_round rounds x to T and back (nearest even): for 16-bit T the
// probabilities P and score gradients dS are rounded to the operand type
// before the products they enter (P·V, Pᵀ·dO, dS·K, dSᵀ·Q), as PyTorch's
// flash attention and the cpu device's 16-bit attention do; the row sums
// and dS itself are taken from the unrounded P. Identity for float and
// double.
template<class T>
__device__ typename Elem<T>::acc attn_round(typename Elem<T>::acc x) {
	T v;
	Elem<T>::store(&v, 0, x);
	return Elem<T>::load(&v, 0);
}

// attn_load_rows copies rows [r0, r0+nr) of one head (row length d) into
// the shared tile dst (row stride ld), zero-filling rows nr..tile−1.
template<class T, class A>
__device__ void attn_load_rows(A* dst, int ld, const T* src, long long r0, int nr, int tile, int d) {
	for (int e = threadIdx.x; e < tile * d; e += blockDim.x) {
		int r = e / d, x = e % d;
		dst[r * ld + x] = r < nr ? (A)Elem<T>::load(src, (r0 + r) * d + x) : (A)0;
	}
}

// attn_scores sets S[r][c] (row stride tile+1) = scale·Q[r]·K[c] for r < mq,
// c < nb, −∞ where a causal mask hides key j0+c from query i0+r.
template<class A>
__device__ void attn_scores(A* S, const A* Q, const A* K, int mq, int nb, int tile, int d, A scale,
		long long i0, long long j0, int causal) {
	for (int e = threadIdx.x; e < mq * nb; e += blockDim.x) {
		int r = e / nb, c = e % nb;
		A s = 0;
		for (int x = 0; x < d; x++)
			s += Q[r * d + x] * K[c * (d + 1) + x];
		S[r * (tile + 1) + c] = (causal && j0 + c > i0 + r) ? attn_neg_inf<A>() : scale * s;
	}
}

template<class T>
__device__ void attention_fwd(T* out, typename Elem<T>::acc* lse, const T* q, const T* k, const T* v,
		long long bh, long long t, int d, double scale_, int causal, int tile) {
	typedef typename Elem<T>::acc A;
	DYN_SMEM(double, smem);
	double* L = smem;                  // tile
	A* M = (A*)(L + tile);             // tile
	A* C = M + tile;                   // tile
	A* Q = C + tile;                   // tile·d
	A* K = Q + tile * d;               // tile·(d+1)
	A* V = K + tile * (d + 1);         // tile·d
	A* S = V + tile * d;               // tile·(tile+1)
	A* O = S + tile * (tile + 1);      // tile·d
	A scale = (A)scale_;
	long long nq = (t + tile - 1) / tile;
	for (long long u = blockIdx.x; u < bh * nq; u += gridDim.x) {
		long long h = u / nq, i0 = (u % nq) * tile;
		long long base = h * t * d;
		int mq = (int)(t - i0 < tile ? t - i0 : tile);
		attn_load_rows(Q, d, q + base, i0, mq, tile, d);
		for (int e = threadIdx.x; e < tile * d; e += blockDim.x)
			O[e] = 0;
		for (int r = threadIdx.x; r < tile; r += blockDim.x) {
			M[r] = attn_neg_inf<A>();
			L[r] = 0;
		}
		long long nk = causal ? i0 + mq : t;
		for (long long j0 = 0; j0 < nk; j0 += tile) {
			int nb = (int)(nk - j0 < tile ? nk - j0 : tile);
			__syncthreads();
			attn_load_rows(K, d + 1, k + base, j0, nb, tile, d);
			attn_load_rows(V, d, v + base, j0, nb, tile, d);
			__syncthreads();
			attn_scores(S, Q, K, mq, nb, tile, d, scale, i0, j0, causal);
			__syncthreads();
			// One thread per query row: the online-softmax step.
			for (int r = threadIdx.x; r < mq; r += blockDim.x) {
				A* row = S + r * (tile + 1);
				A mx = attn_neg_inf<A>();
				for (int c = 0; c < nb; c++)
					if (row[c] > mx) mx = row[c];
				A mo = M[r];
				A c1 = (j0 > 0 && mx > mo) ? exp_acc(mo - mx) : (A)1;
				A mn = mx > mo ? mx : mo;
				double sum = 0;
				for (int c = 0; c < nb; c++) {
					A p = (causal && j0 + c > i0 + r) ? (A)0 : exp_acc(row[c] - mn);
					row[c] = attn_round<T>(p);
					sum += (double)p;
				}
				M[r] = mn;
				C[r] = c1;
				L[r] = L[r] * (double)c1 + sum;
			}
			__syncthreads();
			for (int e = threadIdx.x; e < mq * d; e += blockDim.x) {
				int r = e / d, x = e % d;
				const A* p = S + r * (tile + 1);
				A acc = O[e] * C[r];
				for (int c = 0; c < nb; c++)
					acc += p[c] * V[c * d + x];
				O[e] = acc;
			}
		}
		__syncthreads();
		for (int e = threadIdx.x; e < mq * d; e += blockDim.x) {
			int r = e / d;
			Elem<T>::store(out, base + (i0 + r) * d + e % d, (A)((double)O[e] * (1.0 / L[r])));
		}
		for (int r = threadIdx.x; r < mq; r += blockDim.x)
			lse[h * t + i0 + r] = (A)((double)M[r] + log(L[r]));
		__syncthreads();
	}
}

// attn_delta sets D[r] = dout_r·out_r (accumulated in double) and LS[r] =
// lse_r for the rows [i0, i0+mq) of one head.
template<class T, class A>
__device__ void attn_delta(A* D, A* LS, const T* dout, const T* out, const A* lse, long long i0, int mq, int d) {
	for (int r = threadIdx.x; r < mq; r += blockDim.x) {
		double s = 0;
		for (int x = 0; x < d; x++)
			s += (double)(Elem<T>::load(dout, (i0 + r) * d + x) * Elem<T>::load(out, (i0 + r) * d + x));
		D[r] = (A)s;
		LS[r] = lse[i0 + r];
	}
}

// attn_probs turns the score tile S into P = exp(S − lse) (0 where masked)
// and writes dS = P∘(dO·Vᵀ − δ) into G (both row stride tile+1), both
// rounded by attn_round<T> after dS is taken from the unrounded P.
template<class T, class A>
__device__ void attn_probs(A* S, A* G, const A* dO, const A* V, const A* LS, const A* D, int mq, int nb, int tile,
		int d, long long i0, long long j0, int causal) {
	for (int e = threadIdx.x; e < mq * nb; e += blockDim.x) {
		int r = e / nb, c = e % nb;
		A p = (causal && j0 + c > i0 + r) ? (A)0 : exp_acc(S[r * (tile + 1) + c] - LS[r]);
		A dp = 0;
		for (int x = 0; x < d; x++)
			dp += dO[r * d + x] * V[c * (d + 1) + x];
		S[r * (tile + 1) + c] = attn_round<T>(p);
		G[r * (tile + 1) + c] = attn_round<T>(p * (dp - D[r]));
	}
}

template<class T>
__device__ void attention_grad_kv(T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const T* out,
		const typename Elem<T>::acc* lse, long long bh, long long t, int d, double scale_, int causal, int tile) {
	typedef typename Elem<T>::acc A;
	DYN_SMEM(double, smem);
	A* K = (A*)smem;                   // tile·(d+1)
	A* V = K + tile * (d + 1);         // tile·(d+1)
	A* dK = V + tile * (d + 1);        // tile·d
	A* dV = dK + tile * d;             // tile·d
	A* Q = dV + tile * d;              // tile·d
	A* dO = Q + tile * d;              // tile·d
	A* S = dO + tile * d;              // tile·(tile+1)
	A* G = S + tile * (tile + 1);      // tile·(tile+1)
	A* LS = G + tile * (tile + 1);     // tile
	A* D = LS + tile;                  // tile
	A scale = (A)scale_;
	long long nkt = (t + tile - 1) / tile;
	for (long long u = blockIdx.x; u < bh * nkt; u += gridDim.x) {
		long long h = u / nkt, j0 = (u % nkt) * tile;
		long long base = h * t * d;
		int nb = (int)(t - j0 < tile ? t - j0 : tile);
		attn_load_rows(K, d + 1, k + base, j0, nb, tile, d);
		attn_load_rows(V, d + 1, v + base, j0, nb, tile, d);
		for (int e = threadIdx.x; e < tile * d; e += blockDim.x) {
			dK[e] = 0;
			dV[e] = 0;
		}
		for (long long i0 = causal ? j0 : 0; i0 < t; i0 += tile) {
			int mq = (int)(t - i0 < tile ? t - i0 : tile);
			__syncthreads();
			attn_load_rows(Q, d, q + base, i0, mq, tile, d);
			attn_load_rows(dO, d, dout + base, i0, mq, tile, d);
			attn_delta(D, LS, dout + base, out + base, lse + h * t, i0, mq, d);
			__syncthreads();
			attn_scores(S, Q, K, mq, nb, tile, d, scale, i0, j0, causal);
			__syncthreads();
			attn_probs<T>(S, G, dO, V, LS, D, mq, nb, tile, d, i0, j0, causal);
			__syncthreads();
			for (int e = threadIdx.x; e < nb * d; e += blockDim.x) {
				int c = e / d, x = e % d;
				A sv = 0, sk = 0;
				for (int r = 0; r < mq; r++) {
					sv += S[r * (tile + 1) + c] * dO[r * d + x];
					sk += G[r * (tile + 1) + c] * Q[r * d + x];
				}
				dV[e] += sv;
				dK[e] += scale * sk;
			}
		}
		__syncthreads();
		for (int e = threadIdx.x; e < nb * d; e += blockDim.x) {
			Elem<T>::store(dk, base + j0 * d + e, dK[e]);
			Elem<T>::store(dv, base + j0 * d + e, dV[e]);
		}
		__syncthreads();
	}
}

template<class T>
__device__ void attention_grad_q(T* dq, const T* dout, const T* q, const T* k, const T* v, const T* out,
		const typename Elem<T>::acc* lse, long long bh, long long t, int d, double scale_, int causal, int tile) {
	typedef typename Elem<T>::acc A;
	DYN_SMEM(double, smem);
	A* K = (A*)smem;                   // tile·(d+1)
	A* V = K + tile * (d + 1);         // tile·(d+1)
	A* Q = V + tile * (d + 1);         // tile·d
	A* dO = Q + tile * d;              // tile·d
	A* dQ = dO + tile * d;             // tile·d
	A* S = dQ + tile * d;              // tile·(tile+1)
	A* G = S + tile * (tile + 1);      // tile·(tile+1)
	A* LS = G + tile * (tile + 1);     // tile
	A* D = LS + tile;                  // tile
	A scale = (A)scale_;
	long long nq = (t + tile - 1) / tile;
	for (long long u = blockIdx.x; u < bh * nq; u += gridDim.x) {
		long long h = u / nq, i0 = (u % nq) * tile;
		long long base = h * t * d;
		int mq = (int)(t - i0 < tile ? t - i0 : tile);
		attn_load_rows(Q, d, q + base, i0, mq, tile, d);
		attn_load_rows(dO, d, dout + base, i0, mq, tile, d);
		attn_delta(D, LS, dout + base, out + base, lse + h * t, i0, mq, d);
		for (int e = threadIdx.x; e < tile * d; e += blockDim.x)
			dQ[e] = 0;
		long long nk = causal ? i0 + mq : t;
		for (long long j0 = 0; j0 < nk; j0 += tile) {
			int nb = (int)(nk - j0 < tile ? nk - j0 : tile);
			__syncthreads();
			attn_load_rows(K, d + 1, k + base, j0, nb, tile, d);
			attn_load_rows(V, d + 1, v + base, j0, nb, tile, d);
			__syncthreads();
			attn_scores(S, Q, K, mq, nb, tile, d, scale, i0, j0, causal);
			__syncthreads();
			attn_probs<T>(S, G, dO, V, LS, D, mq, nb, tile, d, i0, j0, causal);
			__syncthreads();
			for (int e = threadIdx.x; e < mq * d; e += blockDim.x) {
				int r = e / d, x = e % d;
				A s = 0;
				for (int c = 0; c < nb; c++)
					s += G[r * (tile + 1) + c] * K[c * (d + 1) + x];
				dQ[e] += scale * s;
			}
		}
		__syncthreads();
		for (int e = threadIdx.x; e < mq * d; e += blockDim.x)
			Elem<T>::store(dq, base + i0 * d + e, dQ[e]);
		__syncthreads();
	}
}

#define ATTENTION(SUF, T, A) \
	extern "C" __global__ void attention_##SUF(T* out, A* lse, const T* q, const T* k, const T* v, \
			long long bh, long long t, int d, double scale, int causal, int tile) { \
		attention_fwd<T>(out, lse, q, k, v, bh, t, d, scale, causal, tile); } \
	extern "C" __global__ void attention_grad_kv_##SUF(T* dk, T* dv, const T* dout, const T* q, const T* k, \
			const T* v, const T* out, const A* lse, long long bh, long long t, int d, double scale, \
			int causal, int tile) { \
		attention_grad_kv<T>(dk, dv, dout, q, k, v, out, lse, bh, t, d, scale, causal, tile); } \
	extern "C" __global__ void attention_grad_q_##SUF(T* dq, const T* dout, const T* q, const T* k, const T* v, \
			const T* out, const A* lse, long long bh, long long t, int d, double scale, int causal, \
			int tile) { \
		attention_grad_q<T>(dq, dout, q, k, v, out, lse, bh, t, d, scale, causal, tile); }
ATTENTION(f64, double, double)
ATTENTION(f32, float, float)
ATTENTION(f16, half16, float)
ATTENTION(bf16, bfloat16, float)
