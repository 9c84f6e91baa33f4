// kernels.cu: kernels for the emulator's own tests (emu_test.go). The same
// source compiles with NVRTC for a device and with g++ under the shim.
#include "common.cuh"

// block_sum reduces v over the block: shuffles within warps, shared memory
// across them. Every thread gets the total.
__device__ float block_sum(float v) {
	__shared__ float part[32];
	__shared__ float total;
	for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	if (lane == 0) part[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = lane < (int)(blockDim.x + 31) / 32 ? part[lane] : 0.0f;
		for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
		if (lane == 0) total = v;
	}
	__syncthreads();
	float t = total;
	__syncthreads(); // total is reused by the next call
	return t;
}

// rowsum: out[r] = sum of x[r, 0:n] of a (rows, n) matrix, a block a row
// (grid-stride over rows).
extern "C" __global__ void rowsum_f32(const float* __restrict__ x, float* __restrict__ out, int rows, int n) {
	for (int r = blockIdx.x; r < rows; r += gridDim.x) {
		float s = 0.0f;
		for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[(long long)r * n + i];
		s = block_sum(s);
		if (threadIdx.x == 0) out[r] = s;
	}
}

// half_to_float widens binary16 bits exactly.
__device__ float half_to_float(unsigned short h) {
	unsigned int sign = (unsigned int)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
	if (exp == 31) return __uint_as_float(sign | 0x7f800000u | (frac << 13));
	if (exp == 0) {
		float v = (float)frac * 5.9604644775390625e-8f; // 2^-24
		return sign ? -v : v;
	}
	return __uint_as_float(sign | ((exp + 112) << 23) | (frac << 13));
}

// float_to_bf16 rounds to nearest even, NaN kept quiet.
__device__ unsigned short float_to_bf16(float f) {
	unsigned int b = __float_as_uint(f);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((b >> 16) | 0x40);
	b += 0x7fffu + ((b >> 16) & 1u);
	return (unsigned short)(b >> 16);
}

// reverse_f16: each block stages its tile of n f16 values in dynamic shared
// memory as floats and writes them reversed within the tile, times scale, as
// bf16: out[t*B + j] = bf16(scale * x[t*B + (B-1-j)]) for full tiles.
extern "C" __global__ void reverse_f16(const unsigned short* x, unsigned short* out, float scale, long long n) {
	DYN_SMEM(float, tile);
	long long base = (long long)blockIdx.x * blockDim.x;
	long long i = base + threadIdx.x;
	if (i < n) tile[threadIdx.x] = half_to_float(x[i]);
	__syncthreads();
	long long src = base + (blockDim.x - 1 - threadIdx.x);
	if (i < n && src < n) out[i] = float_to_bf16(scale * tile[blockDim.x - 1 - threadIdx.x]);
}

// histogram counts values into bins with atomics over a 2-D grid of blocks;
// maxv gets the largest value, sum the total (doubles of small integers add
// exactly in any order).
extern "C" __global__ void histogram(const int* v, long long n, int bins, int* count, int* maxv, double* sum) {
	long long stride = (long long)gridDim.x * gridDim.y * blockDim.x;
	long long start = ((long long)blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
	for (long long i = start; i < n; i += stride) {
		atomicAdd(&count[v[i] % bins], 1);
		atomicMax(maxv, v[i]);
		atomicAdd(sum, (double)v[i]);
	}
}

// lanes: out[t] = (ballot of odd lanes, lane 0's value, sum over the warp by
// __shfl_up_sync prefix) for each thread t; checks the other warp operations.
extern "C" __global__ void lanes(const unsigned int* x, unsigned int* out) {
	int t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
	unsigned int v = x[t];
	unsigned int odd = __ballot_sync(0xffffffffu, v & 1u);
	unsigned int first = __shfl_sync(0xffffffffu, v, 0);
	unsigned int pre = v; // inclusive prefix sum within the warp
	for (int o = 1; o < 32; o <<= 1) {
		unsigned int u = __shfl_up_sync(0xffffffffu, pre, o);
		if (lane >= o) pre += u;
	}
	__syncwarp();
	out[3 * t] = odd;
	out[3 * t + 1] = first;
	out[3 * t + 2] = pre;
}

// divergent is wrong on purpose: threads below `quit` return before a
// barrier that the others wait at.
extern "C" __global__ void divergent(float* out, int quit) {
	if ((int)threadIdx.x < quit) return;
	out[threadIdx.x] = 1.0f;
	__syncthreads();
	out[threadIdx.x] = 2.0f;
}

// fill writes v to out[0:n] (grid-stride).
extern "C" __global__ void fill_f64(double* out, long long n, double v) {
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = v;
}

// barriers waits at n barriers (for measuring the cost of a fiber switch).
extern "C" __global__ void barriers(int n) {
	for (int i = 0; i < n; i++) __syncthreads();
}

// wide: out[i] = (__umulhi(a[i], b[i]), __umul64hi of their squares' low
// words, __float2int_rn of a[i] / 2^23) for the host shim's intrinsics.
extern "C" __global__ void wide(const unsigned int* a, const unsigned int* b, unsigned long long* out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	unsigned long long x = (unsigned long long)a[i] * a[i], y = (unsigned long long)b[i] * b[i];
	out[3 * i] = __umulhi(a[i], b[i]);
	out[3 * i + 1] = __umul64hi(x, y);
	out[3 * i + 2] = (unsigned long long)(long long)__float2int_rn((float)a[i] / 8388608.0f);
}

// neighbour: out[i] = x[i+1 within the block, wrapping] through shared
// memory. With sync = 0 the barrier between the write and the read is
// missing, a bug the emulator must show.
extern "C" __global__ void neighbour(const float* x, float* out, int sync) {
	__shared__ float s[256];
	int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
	s[t] = x[i];
	if (sync) __syncthreads();
	out[i] = s[(t + 1) % blockDim.x];
}

// overindex writes part[k] of a 32-element __shared__ array; k = 32 is a bug
// the emulator must stop.
extern "C" __global__ void overindex(float* out, int k) {
	__shared__ float part[32];
	part[threadIdx.x % 32] = 1.0f;
	__syncthreads();
	if (threadIdx.x == 0) {
		part[k] = 2.0f;
		out[0] = part[0];
	}
}
