// stream.cpp: streams and events. Work is never run when
// it is queued: each stream keeps a queue that runs only when something waits
// for it (cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize or
// cuEventQuery of a later event, a synchronous copy, or a stream that waits on
// an event of it), so a host that reads results before it synchronises reads
// stale memory, as it could on a GPU.
#include "drv.h"
#include "registry.h"
#include "fiber.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

EmuStream null_stream;
std::set<EmuStream*> streams{&null_stream}; // every stream ever made (dead ones too)
std::set<EmuEvent*> events;

// run executes s's queued work until `upto` items have begun.
void run(EmuStream* s, unsigned long long upto) {
	while (s->started < upto && !s->q.empty()) {
		std::function<void()> w = std::move(s->q.front());
		s->q.pop_front();
		s->started++;
		if (!emu_sticky) w(); // after a launch failure, queued work is dropped
	}
}

// legacy_order returns the work that makes a blocking stream's next item wait
// for the NULL stream's work queued so far, and the reverse for the NULL stream.
std::function<void()> legacy_order(EmuStream* s) {
	if (s == &null_stream) {
		std::vector<std::pair<EmuStream*, unsigned long long>> upto;
		for (EmuStream* o : streams)
			if (o != s && o->live && o->blocking && o->queued > o->started) upto.push_back({o, o->queued});
		if (upto.empty()) return nullptr;
		return [upto] { for (auto& u : upto) run(u.first, u.second); };
	}
	if (!s->blocking || null_stream.queued == null_stream.started) return nullptr;
	unsigned long long pos = null_stream.queued;
	return [pos] { run(&null_stream, pos); };
}

} // namespace

EmuStream* emu_stream(CUstream s, CUresult* r) {
	// 0, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) all name the one
	// default stream: the emulator has no per-thread default streams.
	if ((uintptr_t)s <= 2) return &null_stream;
	if (!streams.count(s) || !s->live) {
		*r = CUDA_ERROR_INVALID_HANDLE;
		return nullptr;
	}
	return s;
}

void emu_enqueue(EmuStream* s, std::function<void()> work) {
	if (std::function<void()> order = legacy_order(s)) {
		s->q.push_back(std::move(order));
		s->queued++;
	}
	s->q.push_back(std::move(work));
	s->queued++;
}

void emu_sync_all() {
	for (bool more = true; more;) {
		more = false;
		for (EmuStream* s : streams)
			if (s->started < s->queued) {
				run(s, s->queued);
				more = true;
			}
	}
}

void emu_sync_legacy() {
	run(&null_stream, null_stream.queued);
	for (EmuStream* s : streams)
		if (s->live && s->blocking) run(s, s->queued);
}

// emu_enqueue_c lets the fake cuBLAS queue work on a stream of this driver.
extern "C" __attribute__((visibility("default"))) CUresult emu_enqueue_c(CUstream s, void (*fn)(void*), void* arg) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	CUresult r = CUDA_SUCCESS;
	EmuStream* st = emu_stream(s, &r);
	if (!st) return r;
	emu_enqueue(st, [fn, arg] { fn(arg); });
	return CUDA_SUCCESS;
}

EMU_API CUresult cuStreamCreate(CUstream* out, unsigned flags) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!out || flags > 1) return CUDA_ERROR_INVALID_VALUE;
	EmuStream* s = new EmuStream;
	s->blocking = flags == 0; // CU_STREAM_NON_BLOCKING = 1
	streams.insert(s);
	*out = s;
	return CUDA_SUCCESS;
}

// cuStreamDestroy_v2: queued work still completes (here, at once).
EMU_API CUresult cuStreamDestroy_v2(CUstream s) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!s || !streams.count(s) || !s->live) return CUDA_ERROR_INVALID_HANDLE;
	run(s, s->queued);
	s->live = false; // kept: events and other streams' waits may name it
	return CUDA_SUCCESS;
}

EMU_API CUresult cuStreamSynchronize(CUstream s) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	CUresult r = CUDA_SUCCESS;
	EmuStream* st = emu_stream(s, &r);
	if (!st) return r;
	run(st, st->queued);
	return emu_sticky;
}

EMU_API CUresult cuEventCreate(CUevent* out, unsigned flags) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!out || flags > 0xf) return CUDA_ERROR_INVALID_VALUE;
	EmuEvent* e = new EmuEvent;
	events.insert(e);
	*out = e;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuEventDestroy_v2(CUevent e) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!events.erase(e)) return CUDA_ERROR_INVALID_HANDLE;
	delete e;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuEventRecord(CUevent e, CUstream s) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
	CUresult r = CUDA_SUCCESS;
	EmuStream* st = emu_stream(s, &r);
	if (!st) return r;
	if (legacy_order(st)) emu_enqueue(st, [] {}); // a no-op, ordered as any work, marks the point
	e->s = st;
	e->pos = st->queued;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuEventSynchronize(CUevent e) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
	if (e->s) run(e->s, e->pos);
	return emu_sticky;
}

// cuEventQuery of an event whose work has not run yet reports NOT_READY and
// lets that work run, so a later query (as after a real wait) succeeds.
EMU_API CUresult cuEventQuery(CUevent e) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
	if (!e->s || e->s->started >= e->pos) return emu_sticky;
	run(e->s, e->pos);
	return emu_sticky ? emu_sticky : CUDA_ERROR_NOT_READY;
}

EMU_API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_SUCCESS;
	EmuStream* st = emu_stream(s, &r);
	if (!st) return r;
	if (!e->s) return CUDA_SUCCESS; // an event never recorded is complete
	EmuStream* other = e->s;
	unsigned long long pos = e->pos;
	emu_enqueue(st, [other, pos] { run(other, pos); });
	return CUDA_SUCCESS;
}
