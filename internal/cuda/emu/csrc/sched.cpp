// sched.cpp: runs a kernel's blocks one at a time, each block's threads as
// fibers on the calling OS thread. A fiber runs until it reaches a barrier
// (__syncthreads), a warp operation (shuffle, vote, __syncwarp) or returns;
// when no fiber can run, the scheduler releases a warp whose live lanes all
// wait at a warp operation, or the block when all its threads wait at
// __syncthreads. Any other state (some threads at a barrier, others returned
// or at another operation) is a divergent barrier: the block fails.
#include "fiber.h"

#if !defined(__x86_64__)
#error "the emulator's fiber switch is written for x86-64"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern "C" {
uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
const int warpSize = 32;
}

namespace {

enum State { READY, AT_BARRIER, AT_WARP, DONE };
enum WarpOp { OP_SHFL, OP_SYNCWARP, OP_ALL, OP_ANY, OP_BALLOT };

const size_t kStack = 256 << 10; // bytes of stack per fiber
const size_t kGuard = 4096;      // an inaccessible page below each stack
const int kMaxThreads = 1024;

struct Fiber {
	void* sp;       // saved stack pointer while switched out
	char* lo;       // lowest usable byte of its stack
	State state;
	uint3 tid;
	int op;          // the warp operation it waits at
	unsigned mask;   // its mask
	unsigned long long val; // value offered (shuffle) or predicate (votes)
	int src;         // lane to read from (shuffle)
	unsigned long long result;
};

Fiber fibers[kMaxThreads];
char* stacks;            // kMaxThreads × (kGuard + kStack), mapped once
void* sched_sp;          // the scheduler's stack pointer while a fiber runs
Fiber* cur;              // the running fiber
const EmuKernel* run_k;  // the kernel and arguments of the running launch
void* run_args;
char* dyn_smem;          // dynamic shared memory of the running block
std::string trap_msg;    // set by emu_trap

extern "C" void emu_swap(void** save, void* to) __attribute__((visibility("hidden")));
extern "C" void emu_fiber_start(void) __attribute__((visibility("hidden")));

// emu_swap saves the callee-saved registers and the FP control words on the
// current stack, stores the stack pointer in *save, and resumes the stack `to`.
asm(R"(
	.text
	.p2align 4
	.type emu_swap,@function
emu_swap:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	subq $16, %rsp
	stmxcsr 8(%rsp)
	fnstcw (%rsp)
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	fldcw (%rsp)
	ldmxcsr 8(%rsp)
	addq $16, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size emu_swap, .-emu_swap
	.p2align 4
	.type emu_fiber_start,@function
emu_fiber_start:
	andq $-16, %rsp
	call emu_fiber_main
	ud2
	.size emu_fiber_start, .-emu_fiber_start
)");

void yield(State s) {
	cur->state = s;
	emu_swap(&cur->sp, sched_sp);
}

extern "C" __attribute__((visibility("hidden"), used)) void emu_fiber_main(void) {
	run_k->call(run_args);
	yield(DONE);
	abort(); // a finished fiber is never resumed
}

void map_stacks() {
	if (stacks) return;
	size_t per = kGuard + kStack;
	void* p = mmap(nullptr, per * kMaxThreads, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) { perror("emu: mmap fiber stacks"); abort(); }
	stacks = (char*)p;
	for (int i = 0; i < kMaxThreads; i++) {
		fibers[i].lo = stacks + i * per + kGuard;
		if (mprotect(fibers[i].lo, kStack, PROT_READ | PROT_WRITE) != 0) { perror("emu: mprotect"); abort(); }
	}
}

// start prepares fiber f to begin at emu_fiber_start on its next resume.
void start(Fiber* f) {
	unsigned long long* top = (unsigned long long*)(f->lo + kStack);
	unsigned long long* sp = top - 10;
	sp[0] = 0x037f;                 // x87 control word
	sp[1] = 0x1f80;                 // MXCSR
	for (int i = 2; i < 8; i++) sp[i] = 0; // r15 r14 r13 r12 rbx rbp
	sp[8] = (unsigned long long)(void*)emu_fiber_start;
	sp[9] = 0;
	f->sp = sp;
	f->state = READY;
}

void resume(Fiber* f) {
	cur = f;
	threadIdx = f->tid;
	emu_swap(&sched_sp, f->sp);
	cur = nullptr;
}

int lane_count(int n, int w) { return n - 32 * w < 32 ? n - 32 * w : 32; }

const char* op_name(int op) {
	switch (op) {
	case OP_SHFL: return "a shuffle";
	case OP_SYNCWARP: return "__syncwarp";
	case OP_ALL: return "__all_sync";
	case OP_ANY: return "__any_sync";
	default: return "__ballot_sync";
	}
}

// release_warp completes the warp operation that all lanes of warp w wait at.
bool release_warp(Fiber* lanes, int n, std::string* err) {
	unsigned long long all = 1, any = 0, ballot = 0;
	for (int i = 0; i < n; i++) {
		if (lanes[i].op != lanes[0].op) {
			*err = std::string("warp lanes wait at different warp operations (") + op_name(lanes[0].op) + " and " + op_name(lanes[i].op) + ")";
			return false;
		}
		all &= lanes[i].val != 0;
		any |= lanes[i].val != 0;
		if (lanes[i].val) ballot |= 1ull << i;
	}
	for (int i = 0; i < n; i++) {
		Fiber* f = &lanes[i];
		switch (f->op) {
		case OP_SHFL: // a lane that does not exist gives all ones (NaN, -1)
			f->result = f->src < n ? lanes[f->src].val : ~0ull;
			break;
		case OP_ALL: f->result = all; break;
		case OP_ANY: f->result = any; break;
		case OP_BALLOT: f->result = ballot; break;
		}
		f->state = READY;
	}
	return true;
}

// settle is called when no fiber is READY: it releases warps or the block, or
// reports why the block cannot go on. It returns 1 when fibers were released,
// 0 when every thread has returned, -1 on failure.
int settle(int n, std::string* err) {
	bool released = false;
	for (int w = 0; 32 * w < n; w++) {
		Fiber* lanes = &fibers[32 * w];
		int m = lane_count(n, w), waiting = 0;
		for (int i = 0; i < m; i++) waiting += lanes[i].state == AT_WARP;
		if (waiting == 0) continue;
		if (waiting < m) {
			char b[200];
			snprintf(b, sizeof b, "divergent warp operation: %d of %d lanes of warp %d wait at %s while the others returned or wait at __syncthreads", waiting, m, w, op_name(lanes[0].op));
			*err = b;
			return -1;
		}
		if (!release_warp(lanes, m, err)) return -1;
		released = true;
	}
	if (released) return 1;
	int done = 0, bar = 0;
	for (int i = 0; i < n; i++) {
		done += fibers[i].state == DONE;
		bar += fibers[i].state == AT_BARRIER;
	}
	if (done == n) return 0;
	if (bar == n) {
		for (int i = 0; i < n; i++) fibers[i].state = READY;
		return 1;
	}
	char b[200];
	snprintf(b, sizeof b, "divergent barrier: %d of %d threads wait at __syncthreads while %d returned", bar, n, done);
	*err = b;
	return -1;
}

// run_block runs one block to its end. Between two barriers its threads run
// one after another, in increasing order in one phase and decreasing in the
// next (starting with the block's parity), so a thread that reads what
// another wrote without a barrier between them reads it too early in one of
// the two orders.
bool run_block(int n, unsigned smem, unsigned parity, std::string* err) {
	if (smem) memset(dyn_smem, 0xff, smem); // poison: shared memory starts undefined
	for (int i = 0; i < n; i++) start(&fibers[i]);
	for (unsigned phase = parity;; phase++) {
		for (int j = 0; j < n; j++) {
			int i = phase & 1 ? n - 1 - j : j;
			if (fibers[i].state == READY) resume(&fibers[i]);
		}
		if (!trap_msg.empty()) { *err = trap_msg; return false; }
		int r = settle(n, err);
		if (r <= 0) return r == 0;
	}
}

// warp_wait parks the current fiber at a warp operation and returns the
// operation's result for it.
unsigned long long warp_wait(int op, unsigned mask, unsigned long long val, int src) {
	if (!cur) { fprintf(stderr, "emu: a warp operation outside a kernel\n"); abort(); }
	if (mask != 0xffffffffu && trap_msg.empty()) trap_msg = "a warp operation with a mask other than 0xffffffff (the emulator supports only full warps)";
	cur->op = op;
	cur->mask = mask;
	cur->val = val;
	cur->src = src;
	yield(AT_WARP);
	return cur->result;
}

int linear_lane() {
	unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	return (int)(t % 32);
}

} // namespace

extern "C" void emu_syncthreads(void) {
	if (!cur) { fprintf(stderr, "emu: __syncthreads outside a kernel\n"); abort(); }
	yield(AT_BARRIER);
}

extern "C" void emu_syncwarp(unsigned mask) { warp_wait(OP_SYNCWARP, mask, 0, 0); }

extern "C" unsigned long long emu_shfl(unsigned mask, unsigned long long v, int kind, int arg, int width) {
	int lane = linear_lane();
	if (width <= 0 || width > 32 || (width & (width - 1))) {
		if (trap_msg.empty()) trap_msg = "a shuffle width that is not a power of two ≤ 32";
		width = 32;
	}
	int base = lane & ~(width - 1), src = lane;
	switch (kind) {
	case EMU_SHFL_IDX: src = base + (arg & (width - 1)); break;
	case EMU_SHFL_UP: src = lane - arg >= base ? lane - arg : lane; break;
	case EMU_SHFL_DOWN: src = lane + arg < base + width ? lane + arg : lane; break;
	case EMU_SHFL_XOR: src = ((lane ^ arg) & ~(width - 1)) == base ? lane ^ arg : lane; break;
	}
	return warp_wait(OP_SHFL, mask, v, src);
}

extern "C" int emu_vote(unsigned mask, int pred, int kind) {
	return (int)warp_wait(kind == EMU_VOTE_ALL ? OP_ALL : OP_ANY, mask, pred != 0, 0);
}

extern "C" unsigned emu_ballot(unsigned mask, int pred) {
	return (unsigned)warp_wait(OP_BALLOT, mask, pred != 0, 0);
}

extern "C" void* emu_dynamic_smem(void) { return dyn_smem; }

extern "C" void emu_trap(const char* why) {
	if (trap_msg.empty()) trap_msg = why;
	yield(DONE);
}

bool emu_run_grid(const EmuKernel* k, void* args, dim3 grid, dim3 block, unsigned smem, std::string* err) {
	map_stacks();
	int n = (int)(block.x * block.y * block.z);
	for (int i = 0; i < n; i++)
		fibers[i].tid = uint3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
	char* buf = smem ? (char*)aligned_alloc(256, (smem + 255) / 256 * 256) : nullptr;
	dyn_smem = buf;
	run_k = k;
	run_args = args;
	trap_msg.clear();
	gridDim = grid;
	blockDim = block;
	bool ok = true;
	for (unsigned z = 0; ok && z < grid.z; z++)
		for (unsigned y = 0; ok && y < grid.y; y++)
			for (unsigned x = 0; ok && x < grid.x; x++) {
				blockIdx = uint3{x, y, z};
				if (!run_block(n, smem, x + y + z, err)) {
					char b[120];
					snprintf(b, sizeof b, " (block (%u,%u,%u) of grid (%u,%u,%u), block (%u,%u,%u))", x, y, z, grid.x, grid.y, grid.z, block.x, block.y, block.z);
					*err += b;
					ok = false;
				}
			}
	free(buf);
	dyn_smem = nullptr;
	run_k = nullptr;
	return ok;
}
