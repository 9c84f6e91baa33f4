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

// run executes s's queued work until `upto` items have begun. It stops in
// front of a gate that is not ready (false), and at a gate of s that is
// already being evaluated further up the stack (a cycle, as a GPU would
// hang on); after a launch failure queued work is dropped, gates included.
bool run(EmuStream* s, unsigned long long upto) {
	while (s->started < upto && !s->q.empty()) {
		EmuItem& f = s->q.front();
		if (f.ready && !emu_sticky) {
			if (s->gating) return false;
			s->gating = true;
			bool ok = f.ready();
			s->gating = false;
			if (!ok) return false;
		}
		EmuItem w = std::move(s->q.front());
		s->q.pop_front();
		s->started++;
		if (!emu_sticky && w.work) w.work();
	}
	return true;
}

// runner is a gate that holds until other has run its first pos items.
std::function<bool()> runner(EmuStream* other, unsigned long long pos) {
	return [other, pos] { return run(other, pos); };
}

// legacy_order returns the gate that makes a blocking stream's next item wait
// for the NULL stream's work queued so far, and the reverse for the NULL stream.
std::function<bool()> legacy_order(EmuStream* s) {
	if (s == &null_stream) {
		std::vector<std::pair<EmuStream*, unsigned long long>> upto;
		for (EmuStream* o : streams)
			if (o != s && o->live && o->blocking && o->queued > o->started) upto.push_back({o, o->queued});
		if (upto.empty()) return nullptr;
		return [upto] {
			for (auto& u : upto)
				if (!run(u.first, u.second)) return false;
			return true;
		};
	}
	if (!s->blocking || null_stream.queued == null_stream.started) return nullptr;
	return runner(&null_stream, null_stream.queued);
}

bool sync_all_once() {
	bool done = true;
	for (EmuStream* s : streams)
		if (s->started < s->queued) done = run(s, s->queued) && done;
	for (EmuStream* s : streams)
		if (s->started < s->queued) done = false; // work that a gate's peer queued meanwhile
	return done;
}

bool sync_legacy_once() {
	bool done = run(&null_stream, null_stream.queued);
	for (EmuStream* s : streams)
		if (s->live && s->blocking) done = run(s, s->queued) && done;
	return done;
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

unsigned long long emu_enqueue_gate(EmuStream* s, std::function<bool()> ready, std::function<void()> work) {
	if (std::function<bool()> order = legacy_order(s)) {
		s->q.push_back({std::move(order), nullptr});
		s->queued++;
	}
	s->q.push_back({std::move(ready), std::move(work)});
	return s->queued++;
}

void emu_enqueue(EmuStream* s, std::function<void()> work) { emu_enqueue_gate(s, nullptr, std::move(work)); }

bool emu_run(EmuStream* s, unsigned long long upto) { return run(s, upto); }

// emu_block retries done until it holds, letting go of the driver lock
// between tries so that the threads a gate waits for can queue their part;
// it says so on stderr once a wait passes a minute (a rank that never came).
void emu_block(const std::function<bool()>& done) {
	for (int tries = 0; !done(); tries++) {
		if (tries == 1200000) fprintf(stderr, "emu: a synchronising call has waited a minute for a gate (a collective a rank never joined?)\n");
		emu_wait_unlocked();
	}
}

void emu_sync_all() { emu_block(sync_all_once); }

void emu_sync_legacy() { emu_block(sync_legacy_once); }

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

// emu_enqueue_gate_c lets the fake NCCL queue a gated item: ready(arg)
// returns nonzero once the item may run, then work(arg) runs. *pos gets
// the item's position on the stream (for emu_run_c of a peer).
extern "C" __attribute__((visibility("default"))) CUresult emu_enqueue_gate_c(CUstream s, int (*ready)(void*), void (*work)(void*), void* arg, unsigned long long* pos) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	CUresult r = CUDA_SUCCESS;
	EmuStream* st = emu_stream(s, &r);
	if (!st) return r;
	*pos = emu_enqueue_gate(st, [ready, arg] { return ready(arg) != 0; }, [work, arg] { work(arg); });
	return CUDA_SUCCESS;
}

// emu_run_c runs stream s's first pos items (called from a gate, under the
// driver lock); it returns 0 when s stopped at a gate that is not ready.
extern "C" __attribute__((visibility("default"))) int emu_run_c(CUstream s, unsigned long long pos) {
	Lock l;
	CUresult r = CUDA_SUCCESS;
	EmuStream* st = emu_stream(s, &r);
	return st ? run(st, pos) : 1;
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
	emu_block([s] { return run(s, s->queued); });
	s->live = false; // kept: events and other streams' waits may name it
	return CUDA_SUCCESS;
}

EMU_API CUresult cuStreamSynchronize(CUstream s) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	CUresult r = CUDA_SUCCESS;
	EmuStream* st = emu_stream(s, &r);
	if (!st) return r;
	emu_block([st] { return run(st, st->queued); });
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
	if (legacy_order(st)) emu_enqueue(st, nullptr); // a no-op, ordered as any work, marks the point
	e->s = st;
	e->pos = st->queued;
	return CUDA_SUCCESS;
}

EMU_API CUresult cuEventSynchronize(CUevent e) {
	Lock l;
	if (CUresult r = emu_check_ctx()) return r;
	if (!events.count(e)) return CUDA_ERROR_INVALID_HANDLE;
	if (EmuStream* st = e->s) {
		unsigned long long pos = e->pos;
		emu_block([st, pos] { return run(st, pos); });
	}
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
	emu_enqueue_gate(st, runner(e->s, e->pos), nullptr);
	return CUDA_SUCCESS;
}
