// sum.cu: kernels for the emulator's own tests. The same source compiles
// with NVRTC for a device (see emu_test.go).
#include "common.cuh"

// rowsum: out[r] = sum of x[r, 0:n] for rows r of a (rows, n) matrix; one
// block a row (grid-stride over rows), a block-wide shared-memory and shuffle
// reduction.
extern "C" __global__ void rowsum_f32(const float* x, float* out, int rows, int n) {
	__shared__ float part[32];
	for (int r = blockIdx.x; r < rows; r += gridDim.x) {
		float s = 0.0f;
		for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[(long long)r * n + i];
		for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
		int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
		if (lane == 0) part[warp] = s;
		__syncthreads();
		if (warp == 0) {
			s = lane < (int)(blockDim.x + 31) / 32 ? part[lane] : 0.0f;
			for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
			if (lane == 0) out[r] = s;
		}
		__syncthreads();
	}
}
