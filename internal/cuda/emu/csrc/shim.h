// shim.h: host definitions of the CUDA C device dialect that headroom's kernels use,
// so that the same sources compile with g++ and run under the emulator's fiber
// scheduler (sched.cpp). Included before every kernel source with -include.
//
// A block's threads are fibers on one OS thread; blocks run one at a time, so
// __shared__ is a static variable and atomics are plain read-modify-writes.
// threadIdx & co are globals that the scheduler sets before it resumes a fiber;
// every call that can switch fibers (barriers, shuffles) is an opaque function,
// so the compiler reloads them after it.
#ifndef HEADROOM_EMU_SHIM_H
#define HEADROOM_EMU_SHIM_H

#include <math.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h> // printf, which NVRTC declares itself

#include "invoke.h" // registration of kernels: emu.Build emits EMU_REGISTER(NAME) after each source

#define HEADROOM_EMU 1
#ifdef EMU_SCAN
#define __global__ EMU_GLOBAL_ENTRY
#else
#define __global__
#endif
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static
#define __constant__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)

struct uint3 { unsigned int x, y, z; };
struct dim3 {
	unsigned int x, y, z;
	dim3(unsigned int a = 1, unsigned int b = 1, unsigned int c = 1) : x(a), y(b), z(c) {}
};

extern "C" {
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
extern const int warpSize;

// Fiber switch points, defined in sched.cpp.
void emu_syncthreads(void);
void emu_syncwarp(unsigned int mask);
unsigned long long emu_shfl(unsigned int mask, unsigned long long v, int kind, int arg, int width);
int emu_vote(unsigned int mask, int pred, int kind);
unsigned int emu_ballot(unsigned int mask, int pred);
void* emu_dynamic_smem(void);
void emu_trap(const char* why);
}

enum { EMU_SHFL_IDX = 0, EMU_SHFL_UP = 1, EMU_SHFL_DOWN = 2, EMU_SHFL_XOR = 3 };
enum { EMU_VOTE_ALL = 0, EMU_VOTE_ANY = 1 };

static inline void __syncthreads(void) { emu_syncthreads(); }
static inline void __syncwarp(unsigned int mask = 0xffffffffu) { emu_syncwarp(mask); }
static inline void __threadfence(void) {}
static inline void __threadfence_block(void) {}
static inline void __trap(void) { emu_trap("__trap"); }

// Bit casts.
static inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline int __float_as_int(float f) { int u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static inline long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, 8); return u; }
static inline double __longlong_as_double(long long u) { double d; memcpy(&d, &u, 8); return d; }

// Shuffles: values travel as 64-bit patterns.
template <class T> static inline unsigned long long emu_bits(T v) {
	unsigned long long u = 0; memcpy(&u, &v, sizeof(T)); return u;
}
template <class T> static inline T emu_unbits(unsigned long long u) {
	T v; memcpy(&v, &u, sizeof(T)); return v;
}
#define EMU_SHFL(NAME, KIND, ARGT)                                                        \
	template <class T> static inline T NAME(unsigned int mask, T v, ARGT a, int width = 32) { \
		static_assert(sizeof(T) <= 8, #NAME ": value wider than 8 bytes");                \
		return emu_unbits<T>(emu_shfl(mask, emu_bits(v), KIND, (int)a, width));           \
	}
EMU_SHFL(__shfl_sync, EMU_SHFL_IDX, int)
EMU_SHFL(__shfl_up_sync, EMU_SHFL_UP, unsigned int)
EMU_SHFL(__shfl_down_sync, EMU_SHFL_DOWN, unsigned int)
EMU_SHFL(__shfl_xor_sync, EMU_SHFL_XOR, int)
#undef EMU_SHFL
static inline int __all_sync(unsigned int mask, int p) { return emu_vote(mask, p, EMU_VOTE_ALL); }
static inline int __any_sync(unsigned int mask, int p) { return emu_vote(mask, p, EMU_VOTE_ANY); }
static inline unsigned int __ballot_sync(unsigned int mask, int p) { return emu_ballot(mask, p); }

// Atomics: one OS thread runs every fiber and a fiber never switches inside
// these, so a plain read-modify-write is atomic.
template <class T> static inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
template <class T> static inline T atomicSub(T* p, T v) { T o = *p; *p = o - v; return o; }
template <class T> static inline T atomicExch(T* p, T v) { T o = *p; *p = v; return o; }
template <class T> static inline T atomicMax(T* p, T v) { T o = *p; if (v > o) *p = v; return o; }
template <class T> static inline T atomicMin(T* p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <class T> static inline T atomicAnd(T* p, T v) { T o = *p; *p = o & v; return o; }
template <class T> static inline T atomicOr(T* p, T v) { T o = *p; *p = o | v; return o; }
template <class T> static inline T atomicXor(T* p, T v) { T o = *p; *p = o ^ v; return o; }
template <class T> static inline T atomicCAS(T* p, T cmp, T v) { T o = *p; if (o == cmp) *p = v; return o; }

// Math built-ins of NVRTC that <math.h> lacks or spells differently.
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
#define __expf(x) expf(x) // glibc declares __expf itself
#define __logf(x) logf(x) // glibc declares __logf itself
#define __log2f(x) log2f(x) // glibc declares __log2f itself
#define __sinf(x) sinf(x) // glibc declares __sinf itself
#define __cosf(x) cosf(x) // glibc declares __cosf itself
#define __tanf(x) tanf(x) // glibc declares __tanf itself
#define __powf(x, y) powf(x, y) // glibc declares __powf itself
static inline float __fdividef(float x, float y) { return x / y; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float exp10f_(float x) { return powf(10.0f, x); }
static inline float normcdff(float x) { return 0.5f * erfcf(-x * (float)M_SQRT1_2); }
static inline double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
// Integer and conversion intrinsics.
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a * b) >> 32); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
	return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline int __mul24(int a, int b) { return (int)((long long)((a << 8) >> 8) * ((b << 8) >> 8)); }
static inline unsigned int __umul24(unsigned int a, unsigned int b) { return (a & 0xffffffu) * (b & 0xffffffu); }
// __dp4a: the four signed byte products of a and b, summed into c (wrapping).
static inline int __dp4a(int a, int b, int c) {
	unsigned int s = (unsigned int)c;
	for (int i = 0; i < 32; i += 8) s += (unsigned int)((int)(signed char)(a >> i) * (int)(signed char)(b >> i));
	return (int)s;
}
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline unsigned int __float2uint_rn(float x) { return (unsigned int)nearbyintf(x); }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }
static inline float __double2float_rn(double x) { return (float)x; }
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned int x) { return (float)x; }
static inline float __ll2float_rn(long long x) { return (float)x; }
static inline double __ll2double_rn(long long x) { return (double)x; }
static inline int __double2hiint(double d) { return (int)(__double_as_longlong(d) >> 32); }
static inline int __double2loint(double d) { return (int)__double_as_longlong(d); }
static inline double __hiloint2double(int hi, int lo) {
	return __longlong_as_double((long long)(((unsigned long long)(unsigned int)hi << 32) | (unsigned int)lo));
}
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline unsigned int __activemask(void) { return 0xffffffffu; }
static inline long long clock64(void) { static long long t; return ++t; }
static inline void __nanosleep(unsigned int) {}
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned int __brev(unsigned int x) {
	unsigned int r = 0;
	for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
	return r;
}
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

#endif
