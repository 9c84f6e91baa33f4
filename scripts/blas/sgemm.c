// sgemm times OpenBLAS's cblas_sgemm, row-major, C = op(A)·op(B) (alpha 1,
// beta 0), for each size given: N (square) or MxNxK, optionally followed by
// :NN, :NT, :TN or :TT for the transposes of A and B. It repeats each
// product for at least BENCH_SECONDS (default 2) after one warm-up call and
// prints
//
//	sgemm M N K GFLOPS reps seconds TRANSPOSES
//
// Build: cc -O2 -o sgemm sgemm.c -lopenblas   (apt-get install -y libopenblas-dev)
// The thread count and kernel come from OPENBLAS_NUM_THREADS and
// OPENBLAS_CORETYPE, as for any OpenBLAS program.
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *matrix(size_t n, unsigned *seed) {
	float *x = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
	if (x == NULL) {
		perror("aligned_alloc");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		*seed = *seed * 1664525u + 1013904223u;
		x[i] = (float)(*seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
	}
	return x;
}

int main(int argc, char **argv) {
	const char *env = getenv("BENCH_SECONDS");
	double minTime = env ? atof(env) : 2.0;
	if (argc < 2) {
		fprintf(stderr, "usage: sgemm N|MxNxK[:NN|NT|TN|TT] ...\n");
		return 2;
	}
	for (int arg = 1; arg < argc; arg++) {
		int m, n, k;
		char ta = 'N', tb = 'N';
		if (sscanf(argv[arg], "%dx%dx%d:%c%c", &m, &n, &k, &ta, &tb) < 3) {
			m = n = k = atoi(argv[arg]);
		}
		enum CBLAS_TRANSPOSE opA = ta == 'T' ? CblasTrans : CblasNoTrans;
		enum CBLAS_TRANSPOSE opB = tb == 'T' ? CblasTrans : CblasNoTrans;
		int lda = ta == 'T' ? m : k, ldb = tb == 'T' ? k : n;
		if (m <= 0 || n <= 0 || k <= 0) {
			fprintf(stderr, "sgemm: bad size %s\n", argv[arg]);
			return 2;
		}
		unsigned seed = 1;
		float *a = matrix((size_t)m * k, &seed);
		float *b = matrix((size_t)k * n, &seed);
		float *c = matrix((size_t)m * n, &seed);
		cblas_sgemm(CblasRowMajor, opA, opB, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
		long reps = 0;
		double t0 = now(), t;
		do {
			cblas_sgemm(CblasRowMajor, opA, opB, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
			reps++;
		} while ((t = now() - t0) < minTime);
		printf("sgemm %d %d %d %.2f %ld %.3f %c%c\n", m, n, k, 2.0 * m * n * k * reps / t / 1e9, reps, t, ta, tb);
		fflush(stdout);
		free(a);
		free(b);
		free(c);
	}
	return 0;
}
