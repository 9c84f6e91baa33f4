// cublaslt.cpp: the fake cuBLASLt: handles and the version only.
#include <stddef.h>

#include <mutex>
#include <set>

#define API extern "C" __attribute__((visibility("default")))

struct LtHandle {
	int unused;
};
static std::set<LtHandle*> handles;
// Devices open and close concurrently, each on its own thread, so the set
// is guarded: unguarded, a CI run's race-detector pass hung for 10 minutes
// in a device's Close inside cuBLAS's handle teardown while another device
// of the same test opened and closed.
static std::mutex handles_mu;

API int cublasLtCreate(LtHandle** h) {
	if (!h) return 7; // CUBLAS_STATUS_INVALID_VALUE
	*h = new LtHandle{};
	std::lock_guard<std::mutex> lock(handles_mu);
	handles.insert(*h);
	return 0;
}

API int cublasLtDestroy(LtHandle* h) {
	std::lock_guard<std::mutex> lock(handles_mu);
	if (!handles.erase(h)) return 1; // CUBLAS_STATUS_NOT_INITIALIZED
	delete h;
	return 0;
}

API size_t cublasLtGetVersion(void) { return 120405; }
