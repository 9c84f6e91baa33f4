// cublas.cpp: the fake cuBLAS. Handles record their stream and workspace; the
// GEMMs are plain loops in cuBLAS's column-major semantics, accumulating in
// double, queued on the handle's stream like a kernel (through the fake
// driver's emu_enqueue_c), so they are as deferred as any other work.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <set>

#include "half.h"

typedef int cublasStatus_t;
enum {
	CUBLAS_STATUS_SUCCESS = 0,
	CUBLAS_STATUS_NOT_INITIALIZED = 1,
	CUBLAS_STATUS_INVALID_VALUE = 7,
	CUBLAS_STATUS_EXECUTION_FAILED = 13,
	CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum { R_32F = 0, R_64F = 1, R_16F = 2, R_16BF = 14 };
enum { COMPUTE_32F = 68, COMPUTE_32F_PEDANTIC = 69, COMPUTE_64F = 70, COMPUTE_32F_FAST_TF32 = 74 };

#define API extern "C" __attribute__((visibility("default")))

extern "C" int emu_enqueue_c(void* stream, void (*fn)(void*), void* arg); // in the fake libcuda

struct Handle {
	void* stream = nullptr;
	char* ws = nullptr;
	size_t ws_size = 0;
	int math = 0;
};
typedef Handle* cublasHandle_t;

static std::set<Handle*> handles;
static std::recursive_mutex handles_mu; // guards handles; held by every call
#define LOCK std::lock_guard<std::recursive_mutex> lock_(handles_mu)
static long long no_workspace_runs; // GEMMs that ran on a handle with no workspace set

// emu_cublas_runs_without_workspace lets tests see that cuBLAS was given a workspace.
API long long emu_cublas_runs_without_workspace(void) { return no_workspace_runs; }

API cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
	LOCK;
	if (!h) return CUBLAS_STATUS_INVALID_VALUE;
	*h = new Handle;
	handles.insert(*h);
	return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
	LOCK;
	if (!handles.erase(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
	delete h;
	return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetStream_v2(cublasHandle_t h, void* stream) {
	LOCK;
	if (!handles.count(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
	h->stream = stream;
	return CUBLAS_STATUS_SUCCESS;
}

static void touch(char* p, size_t n) {
	volatile char* v = p;
	for (size_t i = 0; i < n; i += 4096) v[i] = v[i];
	if (n) v[n - 1] = v[n - 1];
}

// cublasSetWorkspace_v2 touches the whole workspace, so a bad pointer faults here.
API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void* ws, size_t size) {
	LOCK;
	if (!handles.count(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (size && !ws) return CUBLAS_STATUS_INVALID_VALUE;
	if ((size_t)ws % 256) return CUBLAS_STATUS_INVALID_VALUE; // cuBLAS wants 256-byte alignment
	touch((char*)ws, size);
	h->ws = (char*)ws;
	h->ws_size = size;
	return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetMathMode(cublasHandle_t h, int mode) {
	LOCK;
	if (!handles.count(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
	h->math = mode;
	return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetVersion_v2(cublasHandle_t h, int* v) {
	LOCK;
	if (!handles.count(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!v) return CUBLAS_STATUS_INVALID_VALUE;
	*v = 120405;
	return CUBLAS_STATUS_SUCCESS;
}

// Gemm is one queued (strided, batched) GEMM with its scalars read at the call.
struct Gemm {
	int ta, tb, m, n, k;
	double alpha, beta;
	const char *A, *B;
	char* C;
	int at, bt, ct, lda, ldb, ldc;
	long long sa, sb, sc;
	int batch;
	char* ws;
	size_t ws_size;
};

static size_t type_size(int t) { return t == R_64F ? 8 : t == R_32F ? 4 : 2; }

static double load(const char* p, int t, long long i) {
	switch (t) {
	case R_32F: { float f; memcpy(&f, p + 4 * i, 4); return f; }
	case R_64F: { double d; memcpy(&d, p + 8 * i, 8); return d; }
	case R_16F: { uint16_t h; memcpy(&h, p + 2 * i, 2); return emu_f16_to_f64(h); }
	default: { uint16_t h; memcpy(&h, p + 2 * i, 2); return emu_bf16_to_f64(h); }
	}
}

static void store(char* p, int t, long long i, double v) {
	switch (t) {
	case R_32F: { float f = (float)v; memcpy(p + 4 * i, &f, 4); break; }
	case R_64F: memcpy(p + 8 * i, &v, 8); break;
	case R_16F: { uint16_t h = emu_f64_to_f16(v); memcpy(p + 2 * i, &h, 2); break; }
	default: { uint16_t h = emu_f64_to_bf16(v); memcpy(p + 2 * i, &h, 2); break; }
	}
}

static void run_gemm(void* arg) {
	Gemm* g = (Gemm*)arg;
	if (g->ws) touch(g->ws, g->ws_size);
	else no_workspace_runs++;
	for (int b = 0; b < g->batch; b++) {
		const char *A = g->A + b * g->sa * (long long)type_size(g->at), *B = g->B + b * g->sb * (long long)type_size(g->bt);
		char* C = g->C + b * g->sc * (long long)type_size(g->ct);
		for (int j = 0; j < g->n; j++)
			for (int i = 0; i < g->m; i++) {
				double acc = 0;
				for (int p = 0; p < g->k; p++) {
					double a = load(A, g->at, g->ta ? p + (long long)i * g->lda : i + (long long)p * g->lda);
					double x = load(B, g->bt, g->tb ? j + (long long)p * g->ldb : p + (long long)j * g->ldb);
					acc += a * x;
				}
				long long c = i + (long long)j * g->ldc;
				double v = g->alpha * acc;
				if (g->beta != 0) v += g->beta * load(C, g->ct, c); // beta 0: C is not read (NaN there stays out)
				store(C, g->ct, c, v);
			}
	}
	delete g;
}

// types_ok follows cuBLAS's table of cublasGemmEx type combinations.
static bool types_ok(int at, int bt, int ct, int compute) {
	if (at != bt) return false;
	switch (compute) {
	case COMPUTE_64F: return at == R_64F && ct == R_64F;
	case COMPUTE_32F_FAST_TF32: return at == R_32F && ct == R_32F;
	case COMPUTE_32F: case COMPUTE_32F_PEDANTIC:
		if (at == R_32F) return ct == R_32F;
		return (at == R_16F || at == R_16BF) && (ct == at || ct == R_32F);
	}
	return false;
}

static cublasStatus_t gemm(cublasHandle_t h, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at, int lda,
                           long long sa, const void* B, int bt, int ldb, long long sb, const void* beta, void* C, int ct, int ldc,
                           long long sc, int batch, int compute) {
	if (!handles.count(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (ta < 0 || ta > 2 || tb < 0 || tb > 2 || m < 0 || n < 0 || k < 0 || batch < 0 || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
	ta = ta != 0, tb = tb != 0; // CUBLAS_OP_C is CUBLAS_OP_T for real types
	int rowsA = ta ? k : m, rowsB = tb ? n : k;
	if (lda < (rowsA > 1 ? rowsA : 1) || ldb < (rowsB > 1 ? rowsB : 1) || ldc < (m > 1 ? m : 1)) return CUBLAS_STATUS_INVALID_VALUE;
	if (!types_ok(at, bt, ct, compute)) return CUBLAS_STATUS_NOT_SUPPORTED;
	if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
	bool dbl = compute == COMPUTE_64F;
	Gemm* g = new Gemm{ta, tb, m, n, k, dbl ? *(const double*)alpha : *(const float*)alpha, dbl ? *(const double*)beta : *(const float*)beta,
	                   (const char*)A, (const char*)B, (char*)C, at, bt, ct, lda, ldb, ldc, sa, sb, sc, batch, h->ws, h->ws_size};
	if (emu_enqueue_c(h->stream, run_gemm, g) != 0) {
		delete g;
		return CUBLAS_STATUS_EXECUTION_FAILED;
	}
	return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGemmEx(cublasHandle_t h, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at, int lda,
                                const void* B, int bt, int ldb, const void* beta, void* C, int ct, int ldc, int compute, int algo) {
	LOCK;
	(void)algo;
	return gemm(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, compute);
}

API cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at,
                                              int lda, long long sa, const void* B, int bt, int ldb, long long sb, const void* beta, void* C,
                                              int ct, int ldc, long long sc, int batch, int compute, int algo) {
	LOCK;
	(void)algo;
	return gemm(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute);
}
