// fiber.h: the fiber block scheduler (sched.cpp) as the fake driver sees it.
#ifndef HEADROOM_EMU_FIBER_H
#define HEADROOM_EMU_FIBER_H

#include <string>
#include "shim.h"

// emu_run_grid runs every block of a grid, one block at a time, each block's
// threads as fibers. It returns false and sets *err when a block fails (a
// divergent barrier or warp operation, __trap); the rest of the grid is skipped.
bool emu_run_grid(const EmuKernel* k, void* args, dim3 grid, dim3 block, unsigned smem, std::string* err);

#endif
