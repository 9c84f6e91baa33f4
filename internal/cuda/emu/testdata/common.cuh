// common.cuh for the emulator's tests: what headroom's kernels get from
// device/cuda/kernels/common.cuh, reduced to what these tests use.
#ifdef HEADROOM_EMU
#define DYN_SMEM(T, name) T* name = (T*)emu_dynamic_smem()
#else
#define DYN_SMEM(T, name) extern __shared__ T name[]
#endif
