// registry.h: lookup of registered host kernels (registry.cpp).
#ifndef HEADROOM_EMU_REGISTRY_H
#define HEADROOM_EMU_REGISTRY_H
#include "invoke.h"
const EmuKernel* emu_find_kernel(const char* name); // nullptr when none has that name
#endif
