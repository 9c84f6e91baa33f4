// invoke.h: registration of host-compiled kernels with the fake driver.
// EMU_REGISTER(NAME) (emitted by emu.Build after each kernel source) registers
// an invoker built from NAME's own parameter types: it copies the values that
// kernelParams points to at launch (as the real driver does), and later calls
// NAME with those copies once per simulated thread.
#ifndef HEADROOM_EMU_INVOKE_H
#define HEADROOM_EMU_INVOKE_H

#include <stddef.h>
#include <tuple>
#include <type_traits>
#include <utility>

extern "C" {
typedef struct {
	const char* name;
	int nparams;
	void* (*copy)(void** params); // a heap copy of the parameter values
	void (*call)(void* args);     // runs the kernel body for the current thread
	void (*drop)(void* args);     // frees the copy
} EmuKernel;
int emu_register(const EmuKernel* k);
}

template <class Sig, Sig F> struct EmuInvoker;

template <class... A, void (*F)(A...)> struct EmuInvoker<void (*)(A...), F> {
	typedef std::tuple<typename std::decay<A>::type...> Args;
	template <size_t... I> static void* copyAt(void** p, std::index_sequence<I...>) {
		return new Args(*static_cast<typename std::decay<A>::type*>(p[I])...);
	}
	static void* copy(void** p) { return copyAt(p, std::index_sequence_for<A...>{}); }
	static void call(void* a) { std::apply(F, *static_cast<Args*>(a)); }
	static void drop(void* a) { delete static_cast<Args*>(a); }
	static int add(const char* name) {
		static const EmuKernel k = {name, (int)sizeof...(A), copy, call, drop};
		return emu_register(&k);
	}
};

#define EMU_REGISTER(NAME) \
	static int emu_registered_##NAME = EmuInvoker<decltype(&NAME), &NAME>::add(#NAME);

#endif
