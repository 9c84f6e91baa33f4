// module.cpp: modules and launches. A module is the PTX text it was loaded
// from; a function is found only when the PTX declares `.entry NAME` and a
// kernel NAME was compiled for the host. A launch checks what a device
// checks, copies the parameter values and queues the grid on its stream.
#include "drv.h"
#include "registry.h"
#include "fiber.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memory>

std::set<EmuFunc*> emu_funcs;
static std::set<EmuModule*> modules;

// parse_ptx collects the .entry names of a PTX text and checks its target.
static CUresult parse_ptx(const char* ptx, EmuModule* m) {
	if (!strstr(ptx, ".version") || !strstr(ptx, ".target")) return CUDA_ERROR_INVALID_IMAGE;
	const char* t = strstr(ptx, ".target");
	t += strlen(".target");
	while (*t == ' ' || *t == '\t') t++;
	if (strncmp(t, "sm_", 3) == 0 && atoi(t + 3) > 90) return CUDA_ERROR_NO_BINARY_FOR_GPU;
	const char* v = strstr(ptx, ".version") + strlen(".version");
	int major = 0, minor = 0;
	if (sscanf(v, " %d.%d", &major, &minor) != 2) return CUDA_ERROR_INVALID_IMAGE;
	if (major * 10 + minor > 84) return CUDA_ERROR_UNSUPPORTED_PTX_VERSION; // a 12.4 driver reads PTX ISA ≤ 8.4
	for (const char* p = ptx; (p = strstr(p, ".entry")); ) {
		p += strlen(".entry");
		if (!isspace((unsigned char)*p)) continue;
		while (isspace((unsigned char)*p)) p++;
		const char* b = p;
		while (isalnum((unsigned char)*p) || *p == '_' || *p == '$') p++;
		if (p > b) m->entries.insert(std::string(b, p));
	}
	return CUDA_SUCCESS;
}

EMU_API CUresult cuModuleLoadData(CUmodule* out, const void* image) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
	EmuModule* m = new EmuModule;
	if (CUresult r = parse_ptx((const char*)image, m)) {
		delete m;
		return r;
	}
	modules.insert(m);
	*out = m;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuModuleUnload(CUmodule m) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!modules.erase(m)) return CUDA_ERROR_INVALID_HANDLE;
	for (auto& f : m->funcs) f.second->live = false; // kept: queued launches hold their kernel
	delete m;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuModuleGetFunction(CUfunction* out, CUmodule m, const char* name) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
	if (!modules.count(m)) return CUDA_ERROR_INVALID_HANDLE;
	if (!m->entries.count(name)) return CUDA_ERROR_NOT_FOUND;
	auto it = m->funcs.find(name);
	if (it != m->funcs.end()) {
		*out = it->second;
		return CUDA_SUCCESS;
	}
	const EmuKernel* k = emu_find_kernel(name);
	if (!k) {
		fprintf(stderr, "emu: cuModuleGetFunction: %s is in the PTX but no host kernel has that name (was its source given to emu.Build?)\n", name);
		return CUDA_ERROR_NOT_FOUND;
	}
	EmuFunc* f = new EmuFunc{m, true, k, name};
	m->funcs[name] = f;
	emu_funcs.insert(f);
	*out = f;
	return CUDA_SUCCESS;
}

// cuFuncSetAttribute: only CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8).
EMU_API CUresult cuFuncSetAttribute(CUfunction f, int attrib, int value) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!emu_funcs.count(f) || !f->live) return CUDA_ERROR_INVALID_HANDLE;
	if (attrib != 8) {
		fprintf(stderr, "emu: cuFuncSetAttribute: attribute %d is not emulated\n", attrib);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (value < 0 || value > 232448) return CUDA_ERROR_INVALID_VALUE;
	f->max_dyn_smem = value;
	return CUDA_SUCCESS;
}

static bool dims_ok(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz) {
	if (!gx || !gy || !gz || !bx || !by || !bz) return false;
	if (gx > 2147483647u || gy > 65535 || gz > 65535) return false;
	if (bx > 1024 || by > 1024 || bz > 64) return false;
	return (unsigned long long)bx * by * bz <= 1024;
}

EMU_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                unsigned smem, CUstream s, void** params, void** extra) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!emu_funcs.count(f) || !f->live) return CUDA_ERROR_INVALID_HANDLE;
	if (!dims_ok(gx, gy, gz, bx, by, bz)) return CUDA_ERROR_INVALID_VALUE;
	if ((int)smem > f->max_dyn_smem || smem > 232448) return CUDA_ERROR_INVALID_VALUE;
	if (extra || (f->k->nparams > 0 && !params)) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	EmuStream* st = emu_stream(s, &r);
	if (!st) return r;
	const EmuKernel* k = f->k;
	std::shared_ptr<void> args(k->copy(params), k->drop);
	dim3 grid(gx, gy, gz), block(bx, by, bz);
	emu_enqueue(st, [k, args, grid, block, smem] {
		std::string err;
		if (!emu_run_grid(k, args.get(), grid, block, smem, &err)) {
			fprintf(stderr, "emu: kernel %s failed: %s\n", k->name, err.c_str());
			emu_sticky = CUDA_ERROR_LAUNCH_FAILED;
		}
	});
	return CUDA_SUCCESS;
}
