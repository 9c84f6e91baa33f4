// memory.cpp: device memory is host memory. cuMemAlloc maps anonymous memory;
// the virtual-memory calls work as on a GPU: a reservation is an inaccessible
// mapping, a physical allocation is a memfd, cuMemMap maps it at the address
// with no access and cuMemSetAccess opens it, so a kernel that touches memory
// that is not mapped (or no longer) faults. Physical bytes are counted per
// device against HEADROOM_EMU_MEMORY.
#include "drv.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <vector>

namespace {

struct Phys {     // a physical allocation (cuMemCreate)
	int fd;
	size_t size;
	int dev;
	bool released; // cuMemRelease was called
	int maps;      // mappings of it
};
struct Mapping {
	size_t size;
	CUmemGenericAllocationHandle h;
	bool rw; // cuMemSetAccess gave read/write access
};
struct Block {
	size_t size, counted;
	int dev;
	char* map;      // the mapping that holds it, a guard page at its end
	size_t map_len;
};

std::map<CUdeviceptr, Block> blocks;        // cuMemAlloc_v2
std::map<CUdeviceptr, size_t> reservations; // cuMemAddressReserve
std::map<CUdeviceptr, Mapping> mappings;    // cuMemMap
std::map<CUmemGenericAllocationHandle, Phys> phys;
std::map<void*, size_t> host;               // cuMemAllocHost_v2
CUmemGenericAllocationHandle next_handle = 0x4000;

size_t page() { return (size_t)sysconf(_SC_PAGESIZE); }
size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

bool take(int dev, size_t n) {
	if (emu_used[dev] + n > emu_total_memory() || emu_used[dev] + n < n) return false;
	emu_used[dev] += n;
	return true;
}

// accessible returns the end of the accessible region that holds p, or 0.
CUdeviceptr accessible(CUdeviceptr p) {
	auto b = blocks.upper_bound(p);
	if (b != blocks.begin()) {
		--b;
		if (p < b->first + b->second.size) return b->first + b->second.size;
	}
	auto m = mappings.upper_bound(p);
	if (m != mappings.begin()) {
		--m;
		if (p < m->first + m->second.size && m->second.rw) return m->first + m->second.size;
	}
	return 0;
}

void drop_phys(CUmemGenericAllocationHandle h) {
	Phys& p = phys[h];
	if (!p.released || p.maps > 0) return;
	emu_used[p.dev] -= p.size;
	phys.erase(h);
}

// Prop is CUmemAllocationProp.
struct Location {
	int type, id; // CU_MEM_LOCATION_TYPE_DEVICE = 1
};
struct Prop {
	int type;                 // CU_MEM_ALLOCATION_TYPE_PINNED = 1
	int requestedHandleTypes; // CUmemAllocationHandleType
	Location location;
	void* win32HandleMetaData;
	unsigned char compressionType, gpuDirectRDMACapable;
	unsigned short usage;
	unsigned char reserved[4];
};
struct AccessDesc {
	Location location;
	int flags; // CU_MEM_ACCESS_FLAGS_PROT_READ = 1, PROT_READWRITE = 3
};

bool valid_prop(const Prop* p) {
	return p && p->type == 1 && p->location.type == 1 && p->location.id >= 0 && p->location.id < emu_devices;
}

} // namespace

bool emu_dev_range(CUdeviceptr p, size_t n) {
	CUdeviceptr end = p + n;
	if (end < p) return false;
	if (n == 0) return true;
	while (p < end) {
		CUdeviceptr e = accessible(p);
		if (e == 0) return false;
		p = e;
	}
	return true;
}

EMU_API CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
	*total = emu_total_memory();
	size_t used = emu_used[emu_cur_dev()];
	*free = used < *total ? *total - used : 0; // the total may have been lowered below what is in use
	return CUDA_SUCCESS;
}

// cuMemAlloc_v2 places the block (256-byte aligned, as the driver's) as close
// before an inaccessible guard page as its alignment allows, so a kernel
// that writes past its end faults.
EMU_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t n) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!dptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
	size_t counted = round_up(n, 512);
	if (!take(emu_cur_dev(), counted)) return CUDA_ERROR_OUT_OF_MEMORY;
	size_t body = round_up(n, page()), len = body + page();
	char* p = (char*)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED || mprotect(p + body, page(), PROT_NONE) != 0) {
		if (p != MAP_FAILED) munmap(p, len);
		emu_used[emu_cur_dev()] -= counted;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*dptr = (CUdeviceptr)(p + body - round_up(n, 256));
	blocks[*dptr] = Block{n, counted, emu_cur_dev(), p, len};
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemFree_v2(CUdeviceptr p) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!blocks.count(p)) return CUDA_ERROR_INVALID_VALUE;
	emu_sync_all(); // as the real call, it waits for the device (the lock is let go meanwhile)
	auto it = blocks.find(p);
	if (it == blocks.end()) return CUDA_ERROR_INVALID_VALUE;
	munmap(it->second.map, it->second.map_len);
	emu_used[it->second.dev] -= it->second.counted;
	blocks.erase(it);
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemAllocHost_v2(void** pp, size_t n) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!pp || n == 0) return CUDA_ERROR_INVALID_VALUE;
	void* p = mmap(nullptr, round_up(n, page()), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
	host[p] = n;
	*pp = p;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemFreeHost(void* p) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!host.count(p)) return CUDA_ERROR_INVALID_VALUE;
	emu_sync_all();
	auto it = host.find(p);
	if (it == host.end()) return CUDA_ERROR_INVALID_VALUE;
	munmap(p, round_up(it->second, page()));
	host.erase(it);
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemGetAllocationGranularity(size_t* g, const Prop* prop, int option) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!g || !valid_prop(prop) || (option != 0 && option != 1)) return CUDA_ERROR_INVALID_VALUE;
	*g = kGranularity;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!ptr || size == 0 || size % kGranularity || flags != 0) return CUDA_ERROR_INVALID_VALUE;
	if (align == 0) align = kGranularity;
	if (align & (align - 1) || align % kGranularity) return CUDA_ERROR_INVALID_VALUE;
	(void)addr; // a hint; the emulator places reservations where mmap does
	size_t span = size + align;
	void* p = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
	CUdeviceptr base = round_up((CUdeviceptr)p, align);
	if (base > (CUdeviceptr)p) munmap(p, base - (CUdeviceptr)p);
	CUdeviceptr tail = base + size, end = (CUdeviceptr)p + span;
	if (end > tail) munmap((void*)tail, end - tail);
	reservations[base] = size;
	*ptr = base;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	auto it = reservations.find(ptr);
	if (it == reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
	auto m = mappings.lower_bound(ptr);
	if (m != mappings.end() && m->first < ptr + size) return CUDA_ERROR_INVALID_VALUE; // still mapped
	munmap((void*)ptr, size);
	reservations.erase(it);
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t size, const Prop* prop, unsigned long long flags) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!h || size == 0 || size % kGranularity || flags != 0 || !valid_prop(prop)) return CUDA_ERROR_INVALID_VALUE;
	int dev = prop->location.id;
	if (!take(dev, size)) return CUDA_ERROR_OUT_OF_MEMORY;
	int fd = memfd_create("headroom-emu", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
		if (fd >= 0) close(fd);
		emu_used[dev] -= size;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*h = next_handle++;
	phys[*h] = Phys{fd, size, dev, false, 0};
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	auto it = phys.find(h);
	if (it == phys.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
	close(it->second.fd); // its mappings keep the pages
	it->second.fd = -1;
	it->second.released = true;
	drop_phys(h);
	return CUDA_SUCCESS;
}

// reserved reports whether [p, p+n) lies in one reservation.
static bool reserved(CUdeviceptr p, size_t n) {
	auto it = reservations.upper_bound(p);
	if (it == reservations.begin()) return false;
	--it;
	return p >= it->first && p + n <= it->first + it->second;
}

EMU_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	auto it = phys.find(h);
	if (it == phys.end() || it->second.released) return CUDA_ERROR_INVALID_HANDLE;
	if (size == 0 || size % kGranularity || ptr % kGranularity || offset != 0 || flags != 0 || size > it->second.size)
		return CUDA_ERROR_INVALID_VALUE;
	if (!reserved(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
	auto m = mappings.lower_bound(ptr);
	if (m != mappings.end() && m->first < ptr + size) return CUDA_ERROR_INVALID_VALUE; // overlaps a mapping
	if (m != mappings.begin() && std::prev(m)->first + std::prev(m)->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;
	void* p = mmap((void*)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, it->second.fd, 0);
	if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
	mappings[ptr] = Mapping{size, h, false};
	it->second.maps++;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (size == 0 || size % kGranularity || ptr % kGranularity) return CUDA_ERROR_INVALID_VALUE;
	// The range must consist of whole mappings, back to back.
	CUdeviceptr p = ptr;
	for (auto m = mappings.find(ptr); p < ptr + size; ++m) {
		if (m == mappings.end() || m->first != p || p + m->second.size > ptr + size) return CUDA_ERROR_INVALID_VALUE;
		p += m->second.size;
	}
	for (auto m = mappings.find(ptr); m != mappings.end() && m->first < ptr + size;) {
		CUmemGenericAllocationHandle h = m->second.h;
		m = mappings.erase(m);
		phys[h].maps--;
		drop_phys(h);
	}
	mmap((void*)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const AccessDesc* desc, size_t count) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
	int prot = -1;
	for (size_t i = 0; i < count; i++) {
		const AccessDesc& d = desc[i];
		if (d.location.type != 1 || d.location.id < 0 || d.location.id >= emu_devices) return CUDA_ERROR_INVALID_VALUE;
		if (d.flags != 0 && d.flags != 1 && d.flags != 3) return CUDA_ERROR_INVALID_VALUE;
		if (d.location.id == emu_cur_dev()) prot = d.flags == 3 ? PROT_READ | PROT_WRITE : d.flags == 1 ? PROT_READ : PROT_NONE;
	}
	CUdeviceptr p = ptr;
	for (auto m = mappings.find(ptr); p < ptr + size; ++m) {
		if (m == mappings.end() || m->first != p || p + m->second.size > ptr + size) return CUDA_ERROR_INVALID_VALUE;
		p += m->second.size;
	}
	if (prot < 0) return CUDA_SUCCESS;
	if (mprotect((void*)ptr, size, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
	for (auto m = mappings.find(ptr); m != mappings.end() && m->first < ptr + size; ++m) m->second.rw = prot == (PROT_READ | PROT_WRITE);
	return CUDA_SUCCESS;
}

// Copies and sets. The synchronous copies first finish the work they are
// ordered after on the legacy default stream (the NULL stream's and every
// blocking stream's, not a CU_STREAM_NON_BLOCKING stream's); the Async ones
// are queued.
EMU_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!emu_dev_range(dst, n)) return CUDA_ERROR_INVALID_VALUE;
	emu_sync_legacy();
	if (emu_sticky) return emu_sticky;
	memcpy((void*)dst, src, n);
	return CUDA_SUCCESS;
}

EMU_API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!emu_dev_range(src, n)) return CUDA_ERROR_INVALID_VALUE;
	emu_sync_legacy();
	if (emu_sticky) return emu_sticky;
	memcpy(dst, (const void*)src, n);
	return CUDA_SUCCESS;
}

// queue checks the current context and the stream and queues work on it.
static CUresult queue(CUstream s, std::function<void()> work) {
	if (CUresult r = emu_check_ctx()) return r;
	CUresult r = CUDA_SUCCESS;
	EmuStream* st = emu_stream(s, &r);
	if (!st) return r;
	emu_enqueue(st, std::move(work));
	return CUDA_SUCCESS;
}

// pinned reports whether [p, p+n) lies in one cuMemAllocHost_v2 allocation.
static bool pinned(const void* p, size_t n) {
	auto it = host.upper_bound((void*)p);
	if (it == host.begin()) return false;
	--it;
	return (const char*)p >= (const char*)it->first && (const char*)p + n <= (const char*)it->first + it->second;
}

// cuMemcpyHtoDAsync_v2 reads pinned memory when the copy runs; pageable
// memory, as the driver stages it, at the call (the caller may reuse it).
EMU_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
	Lock l;
	if (!emu_dev_range(dst, n)) return emu_check_ctx() ? emu_check_ctx() : CUDA_ERROR_INVALID_VALUE;
	if (pinned(src, n)) return queue(s, [=] { memcpy((void*)dst, src, n); });
	std::shared_ptr<std::vector<char>> staged(new std::vector<char>((const char*)src, (const char*)src + n));
	return queue(s, [=] { memcpy((void*)dst, staged->data(), n); });
}

EMU_API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s) {
	Lock l;
	if (!emu_dev_range(src, n)) return emu_check_ctx() ? emu_check_ctx() : CUDA_ERROR_INVALID_VALUE;
	return queue(s, [=] { memcpy(dst, (const void*)src, n); });
}

EMU_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	Lock l;
	if (!emu_dev_range(dst, n) || !emu_dev_range(src, n)) return emu_check_ctx() ? emu_check_ctx() : CUDA_ERROR_INVALID_VALUE;
	return queue(s, [=] { memmove((void*)dst, (const void*)src, n); });
}

EMU_API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
	Lock l;
	if (!emu_dev_range(dst, n)) return emu_check_ctx() ? emu_check_ctx() : CUDA_ERROR_INVALID_VALUE;
	return queue(s, [=] { memset((void*)dst, v, n); });
}

EMU_API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
	Lock l;
	if (dst % 4 || n > ((size_t)-1) / 4 || !emu_dev_range(dst, 4 * n)) return emu_check_ctx() ? emu_check_ctx() : CUDA_ERROR_INVALID_VALUE;
	return queue(s, [=] {
		unsigned int* p = (unsigned int*)dst;
		for (size_t i = 0; i < n; i++) p[i] = v;
	});
}
