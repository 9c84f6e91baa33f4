// cublaslt.cpp: the fake cuBLASLt: handles and the version only.
#include <stddef.h>

#include <set>

#define API extern "C" __attribute__((visibility("default")))

struct LtHandle {
	int unused;
};
static std::set<LtHandle*> handles;

API int cublasLtCreate(LtHandle** h) {
	if (!h) return 7; // CUBLAS_STATUS_INVALID_VALUE
	*h = new LtHandle{};
	handles.insert(*h);
	return 0;
}

API int cublasLtDestroy(LtHandle* h) {
	if (!handles.erase(h)) return 1; // CUBLAS_STATUS_NOT_INITIALIZED
	delete h;
	return 0;
}

API size_t cublasLtGetVersion(void) { return 120405; }
