// driver.cpp: the fake driver's initialisation, devices, primary contexts and
// error names. See drv.h.
#include "drv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <thread>

static std::recursive_mutex mu;
static thread_local int depth; // how often this thread holds mu
Lock::Lock() {
	mu.lock();
	depth++;
}
Lock::~Lock() {
	depth--;
	mu.unlock();
}

// emu_wait_unlocked lets go of the driver lock for a moment, however deeply
// this thread holds it, so that other threads can queue the work a gate
// waits for; only the synchronising calls use it, never queued work.
void emu_wait_unlocked() {
	int d = depth;
	for (int i = 0; i < d; i++) mu.unlock();
	depth = 0;
	std::this_thread::sleep_for(std::chrono::microseconds(50));
	for (int i = 0; i < d; i++) mu.lock();
	depth = d;
}

// emu_lock_c and emu_unlock_c take and give back the driver lock, which
// guards the fake NCCL's state too (its gates run under it).
EMU_API void emu_lock_c() {
	mu.lock();
	depth++;
}
EMU_API void emu_unlock_c() {
	depth--;
	mu.unlock();
}

bool emu_initialized;
int emu_devices = 1;
CUresult emu_sticky;
thread_local EmuCtx* emu_current;
size_t emu_used[64];
static EmuCtx contexts[64];

static size_t total_override; // emu_set_total_memory, 0 when unset

// emu_set_total_memory sets the device's total memory (0: back to
// HEADROOM_EMU_MEMORY or the default); emu.Libs.SetMemory calls it.
EMU_API void emu_set_total_memory(unsigned long long bytes) {
	Lock l;
	total_override = (size_t)bytes;
}

size_t emu_total_memory() {
	if (total_override) return total_override;
	const char* s = getenv("HEADROOM_EMU_MEMORY");
	if (s && *s) {
		char* end;
		unsigned long long v = strtoull(s, &end, 10);
		if (*end == 0 && v > 0) return (size_t)v;
		fprintf(stderr, "emu: HEADROOM_EMU_MEMORY=%s is not a byte count; using 4 GiB\n", s);
	}
	return (size_t)4 << 30;
}

CUresult emu_check_ctx() {
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!emu_current || emu_current->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
	return emu_sticky;
}

int emu_cur_dev() { return emu_current ? emu_current->dev : 0; }

static bool valid_dev(CUdevice d) { return emu_initialized && d >= 0 && d < emu_devices; }

EMU_API CUresult cuInit(unsigned flags) {
	Lock l;
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	const char* s = getenv("HEADROOM_EMU_DEVICES");
	if (s && *s) {
		int n = atoi(s);
		if (n < 0 || n > 64) n = 1;
		emu_devices = n;
	}
	if (emu_devices == 0) return CUDA_ERROR_NO_DEVICE;
	for (int i = 0; i < emu_devices; i++) contexts[i].dev = i;
	emu_initialized = true;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuDriverGetVersion(int* v) {
	if (!v) return CUDA_ERROR_INVALID_VALUE;
	*v = 12040;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuDeviceGetCount(int* n) {
	Lock l;
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!n) return CUDA_ERROR_INVALID_VALUE;
	*n = emu_devices;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuDeviceGet(CUdevice* d, int ordinal) {
	Lock l;
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!d) return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
	Lock l;
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
	if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "%s", "headroom emulator");
	return CUDA_SUCCESS;
}

EMU_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice d) {
	Lock l;
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
	if (!bytes) return CUDA_ERROR_INVALID_VALUE;
	*bytes = emu_total_memory();
	return CUDA_SUCCESS;
}

// attribute gives the value of a CUdevice_attribute, as an H200 (sm_90) has
// it, and false for attributes the emulator does not know.
static bool attribute(int a, int* v) {
	switch (a) {
	case 1: *v = 1024; return true;         // MAX_THREADS_PER_BLOCK
	case 2: case 3: *v = 1024; return true; // MAX_BLOCK_DIM_X, Y
	case 4: *v = 64; return true;           // MAX_BLOCK_DIM_Z
	case 5: *v = 2147483647; return true;   // MAX_GRID_DIM_X
	case 6: case 7: *v = 65535; return true; // MAX_GRID_DIM_Y, Z
	case 8: *v = 49152; return true;        // MAX_SHARED_MEMORY_PER_BLOCK
	case 9: *v = 65536; return true;        // TOTAL_CONSTANT_MEMORY
	case 10: *v = 32; return true;          // WARP_SIZE
	case 11: *v = 2147483647; return true;  // MAX_PITCH
	case 12: *v = 65536; return true;       // MAX_REGISTERS_PER_BLOCK
	case 13: *v = 1980000; return true;     // CLOCK_RATE (kHz)
	case 14: *v = 512; return true;         // TEXTURE_ALIGNMENT
	case 15: *v = 1; return true;           // GPU_OVERLAP
	case 16: *v = 132; return true;         // MULTIPROCESSOR_COUNT
	case 17: *v = 0; return true;           // KERNEL_EXEC_TIMEOUT
	case 20: *v = 0; return true;           // COMPUTE_MODE (default)
	case 18: *v = 0; return true;           // INTEGRATED
	case 19: *v = 1; return true;           // CAN_MAP_HOST_MEMORY
	case 31: *v = 1; return true;           // CONCURRENT_KERNELS
	case 32: *v = 1; return true;           // ECC_ENABLED
	case 33: *v = 0; return true;           // PCI_BUS_ID
	case 34: *v = 0; return true;           // PCI_DEVICE_ID
	case 36: *v = 2619000; return true;     // MEMORY_CLOCK_RATE (kHz)
	case 37: *v = 6144; return true;        // GLOBAL_MEMORY_BUS_WIDTH
	case 38: *v = 52428800; return true;    // L2_CACHE_SIZE
	case 39: *v = 2048; return true;        // MAX_THREADS_PER_MULTIPROCESSOR
	case 40: *v = 3; return true;           // ASYNC_ENGINE_COUNT
	case 41: *v = 1; return true;           // UNIFIED_ADDRESSING
	case 50: *v = 0; return true;           // PCI_DOMAIN_ID
	case 75: *v = 9; return true;           // COMPUTE_CAPABILITY_MAJOR
	case 76: *v = 0; return true;           // COMPUTE_CAPABILITY_MINOR
	case 81: *v = 233472; return true;      // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
	case 82: *v = 65536; return true;       // MAX_REGISTERS_PER_MULTIPROCESSOR
	case 97: *v = 232448; return true;      // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	case 102: *v = 1; return true;          // VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
	}
	return false;
}

EMU_API CUresult cuDeviceGetAttribute(int* v, int attrib, CUdevice d) {
	Lock l;
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
	if (!v) return CUDA_ERROR_INVALID_VALUE;
	if (!attribute(attrib, v)) {
		fprintf(stderr, "emu: cuDeviceGetAttribute: attribute %d is not emulated\n", attrib);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

EMU_API CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
	Lock l;
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
	if (!c) return CUDA_ERROR_INVALID_VALUE;
	contexts[d].refs++;
	*c = &contexts[d];
	return CUDA_SUCCESS;
}

// cuDevicePrimaryCtxRelease_v2 drops a reference; the last one ends the
// context's sticky error (its memory is not freed: see doc.go).
EMU_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	Lock l;
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!valid_dev(d)) return CUDA_ERROR_INVALID_DEVICE;
	if (contexts[d].refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
	if (--contexts[d].refs == 0) {
		emu_sync_all();
		emu_sticky = CUDA_SUCCESS;
	}
	return CUDA_SUCCESS;
}

EMU_API CUresult cuCtxSetCurrent(CUcontext c) {
	Lock l;
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (c && (c < contexts || c >= contexts + emu_devices || c->refs == 0)) return CUDA_ERROR_INVALID_CONTEXT;
	emu_current = c;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuCtxGetCurrent(CUcontext* c) {
	Lock l;
	if (!emu_initialized) return CUDA_ERROR_NOT_INITIALIZED;
	if (!c) return CUDA_ERROR_INVALID_VALUE;
	*c = emu_current;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuCtxSynchronize(void) {
	Lock l;
	CUresult r = emu_check_ctx();
	if (r == CUDA_ERROR_NOT_INITIALIZED || r == CUDA_ERROR_INVALID_CONTEXT) return r;
	emu_sync_all();
	return emu_sticky;
}

struct ErrName {
	CUresult code;
	const char *name, *text;
};
static const ErrName errs[] = {
	{CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
	{CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	{CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	{CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
	{CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
	{CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	{CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

static const ErrName* find_err(CUresult e) {
	for (const ErrName& x : errs)
		if (x.code == e) return &x;
	return nullptr;
}

EMU_API CUresult cuGetErrorName(CUresult e, const char** s) {
	if (!s) return CUDA_ERROR_INVALID_VALUE;
	const ErrName* x = find_err(e);
	*s = x ? x->name : nullptr;
	return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EMU_API CUresult cuGetErrorString(CUresult e, const char** s) {
	if (!s) return CUDA_ERROR_INVALID_VALUE;
	const ErrName* x = find_err(e);
	*s = x ? x->text : nullptr;
	return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
