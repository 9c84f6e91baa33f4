// registry.cpp: the host-compiled kernels, by name. Each kernel source's
// generated registration calls emu_register while libcuda.so.1 is loaded.
#include "registry.h"

#include <map>
#include <string>

namespace {
std::map<std::string, const EmuKernel*>& kernels() {
	static std::map<std::string, const EmuKernel*> m;
	return m;
}
} // namespace

extern "C" int emu_register(const EmuKernel* k) {
	kernels()[k->name] = k;
	return 1;
}

const EmuKernel* emu_find_kernel(const char* name) {
	auto it = kernels().find(name);
	return it == kernels().end() ? nullptr : it->second;
}
