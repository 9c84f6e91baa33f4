// drv.h: what the fake driver's files (driver.cpp, memory.cpp, stream.cpp)
// share. Every exported call takes the one driver lock (Lock) first.
#ifndef HEADROOM_EMU_DRV_H
#define HEADROOM_EMU_DRV_H

#include <stddef.h>
#include "invoke.h"
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
struct EmuCtx;
struct EmuStream;
struct EmuEvent;
struct EmuModule;
struct EmuFunc;
typedef EmuCtx* CUcontext;
typedef EmuStream* CUstream;
typedef EmuEvent* CUevent;
typedef EmuModule* CUmodule;
typedef EmuFunc* CUfunction;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_IMAGE = 200,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
	CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_LAUNCH_FAILED = 719,
	CUDA_ERROR_NOT_SUPPORTED = 801,
};

#define EMU_API extern "C" __attribute__((visibility("default")))

const size_t kGranularity = 2 << 20; // VMM granularity, as on H100/H200

struct EmuCtx {
	int dev;
	int refs;
};

// Lock is the driver lock: every exported call holds it.
struct Lock {
	Lock();
	~Lock();
};

// Driver state, in driver.cpp.
extern bool emu_initialized;
extern int emu_devices;
extern CUresult emu_sticky; // a launch failure: every later call returns it
extern thread_local EmuCtx* emu_current;

CUresult emu_check_ctx();          // initialised, a current context, no sticky error
int emu_cur_dev();                 // device of the current context
size_t emu_total_memory();         // HEADROOM_EMU_MEMORY or 4 GiB
extern size_t emu_used[64];        // physical bytes in use per device

// Streams, in stream.cpp.
EmuStream* emu_stream(CUstream s, CUresult* r); // nullptr and *r set when s is not a stream
void emu_enqueue(EmuStream* s, std::function<void()> work);
// emu_enqueue_gate queues an item that runs only once ready() holds (a
// collective whose peers have not all reached it, say): until then the
// stream stops in front of it. It returns the item's position on s.
unsigned long long emu_enqueue_gate(EmuStream* s, std::function<bool()> ready, std::function<void()> work);
bool emu_run(EmuStream* s, unsigned long long upto); // false: stopped at a gate that is not ready
void emu_block(const std::function<bool()>& done);    // retries done, the driver lock released between tries
void emu_wait_unlocked();                             // releases the driver lock a moment (driver.cpp)
void emu_sync_all();
void emu_sync_legacy(); // the NULL stream and the blocking streams, as a synchronous copy waits

// Memory, in memory.cpp.
extern std::set<EmuFunc*> emu_funcs;
bool emu_dev_range(CUdeviceptr p, size_t n); // [p, p+n) is readable and writable device memory

// The handles behind CUstream, CUevent, CUfunction and CUmodule.
// EmuItem is one queued piece of work; ready, when set, gates it.
struct EmuItem {
	std::function<bool()> ready;
	std::function<void()> work;
};

struct EmuStream {
	std::deque<EmuItem> q;
	bool gating = false; // a gate of this stream is being evaluated
	unsigned long long queued = 0, started = 0; // items ever queued, ever begun
	bool blocking = true;                      // synchronises with the NULL stream
	bool live = true;
};

struct EmuEvent {
	EmuStream* s = nullptr; // stream of the last record, nullptr before one
	unsigned long long pos = 0;
};

struct EmuFunc {
	EmuModule* m;
	bool live = true;
	const EmuKernel* k;
	std::string name;
	int max_dyn_smem = 49152; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};

struct EmuModule {
	std::set<std::string> entries; // the PTX's .entry names
	std::map<std::string, EmuFunc*> funcs;
};

#endif
