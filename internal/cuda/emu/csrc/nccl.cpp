// nccl.cpp: the fake libnccl.so.2. The ranks of a clique live in one process
// (each on its own thread, as headroom's cuda devices do) and meet by their
// unique id in ncclCommInitRank. A collective is a gate on the rank's stream
// of the fake driver (emu_enqueue_gate_c): it runs when every rank has queued
// its part and every rank's stream has run the work queued before its part;
// the first rank whose stream gets there moves the data of all ranks at
// once, element by element, reducing in rank order (rank 0 + rank 1 + …) in
// F32 for F32, F16 and BF16 and in F64 for F64, Avg dividing that sum by the
// rank count, 16-bit results rounded once to nearest even — the arithmetic of
// package parallel's in-process group, so results match it bit for bit.
// Each communicator allocates kBuffer bytes of device memory through the
// fake driver at init, so that NCCL's own memory shows in cuMemGetInfo_v2
// as on a GPU. Calls in ncclGroupStart/End run as they come (nothing is
// deferred): a thread cannot initialise several ranks inside one group.
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "half.h"

#define API extern "C" __attribute__((visibility("default")))

typedef int ncclResult_t;
enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6 };
enum { ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9 };
enum { ncclSum = 0, ncclAvg = 4 };
enum Kind { kAllReduce, kReduceScatter, kAllGather, kBroadcast };
static const char* kind_names[] = {"ncclAllReduce", "ncclReduceScatter", "ncclAllGather", "ncclBroadcast"};

const size_t kBuffer = 4 << 20; // device bytes each communicator holds (NCCL's buffers)

struct ncclUniqueId {
	char internal[128];
};

// The fake driver's calls.
typedef void* CUstream;
typedef void* CUcontext;
extern "C" int cuMemAlloc_v2(unsigned long long* p, size_t n);
extern "C" int cuMemFree_v2(unsigned long long p);
extern "C" int cuCtxGetCurrent(CUcontext* c);
extern "C" int cuCtxSetCurrent(CUcontext c);
extern "C" int emu_enqueue_gate_c(CUstream s, int (*ready)(void*), void (*work)(void*), void* arg, unsigned long long* pos);
extern "C" int emu_run_c(CUstream s, unsigned long long pos);
extern "C" void emu_lock_c();
extern "C" void emu_unlock_c();

struct DriverLock {
	DriverLock() { emu_lock_c(); }
	~DriverLock() { emu_unlock_c(); }
};

// Part is one rank's arguments of a collective.
struct Part {
	Kind kind;
	const char* send;
	char* recv;
	size_t count;
	int dt, op, root;
	CUstream s;
	unsigned long long pos; // the gate's position on s
};

struct Op {
	std::vector<Part> parts;
	std::vector<bool> joined;
	int njoined = 0, finished = 0;
	bool done = false;
};

struct Comm;
struct Clique {
	std::string id;
	int n;
	std::vector<Comm*> ranks;
	int joined = 0, live = 0, gates = 0; // ranks met; communicators alive; gates queued
	std::map<unsigned long long, Op*> ops; // by sequence number
	bool aborted = false;
};

struct Comm {
	Clique* q;
	int rank;
	unsigned long long seq = 0;
	unsigned long long buf = 0;
	CUcontext ctx = nullptr;
	int async = ncclSuccess;
};

// Guarded by the driver lock (collectives, destroy) or by init_mu (init).
static std::set<Comm*> comms;
static std::mutex init_mu;
static std::condition_variable init_cv;
static std::map<std::string, Clique*> forming; // cliques still meeting, by id
static std::atomic<unsigned long long> ids;

API ncclResult_t ncclGetVersion(int* v) {
	if (!v) return ncclInvalidArgument;
	*v = 22005; // 2.20.5
	return ncclSuccess;
}

API const char* ncclGetErrorString(ncclResult_t r) {
	switch (r) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	}
	return "unknown result code";
}

API ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
	if (!id) return ncclInvalidArgument;
	memset(id, 0, sizeof *id);
	snprintf(id->internal, sizeof id->internal, "emu-nccl %d %llu", (int)getpid(), ++ids);
	return ncclSuccess;
}

API ncclResult_t ncclGroupStart() { return ncclSuccess; }
API ncclResult_t ncclGroupEnd() { return ncclSuccess; }

// join adds c to its clique and waits for the clique's other ranks.
static ncclResult_t join(Comm* c, const std::string& id, int n) {
	std::unique_lock<std::mutex> l(init_mu);
	Clique*& q = forming[id];
	if (!q) {
		q = new Clique;
		q->id = id;
		q->n = n;
		q->ranks.assign(n, nullptr);
	}
	if (q->n != n || q->ranks[c->rank]) {
		fprintf(stderr, "emu nccl: ncclCommInitRank(nranks %d, rank %d): the clique has %d ranks and rank %d %s\n", n, c->rank, q->n, c->rank,
		        q->n != n ? "differs" : "twice");
		return ncclInvalidUsage;
	}
	Clique* mine = q;
	c->q = mine;
	mine->ranks[c->rank] = c;
	if (++mine->joined == n) {
		mine->live = n;
		forming.erase(id); // an id names one clique, once
		init_cv.notify_all();
	}
	init_cv.wait(l, [mine, n] { return mine->joined == n; });
	return ncclSuccess;
}

API ncclResult_t ncclCommInitRank(Comm** out, int nranks, ncclUniqueId id, int rank) {
	if (!out || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
	int pid = 0;
	if (sscanf(id.internal, "emu-nccl %d", &pid) != 1 || pid != (int)getpid()) {
		// Ranks of other processes can never join: refuse rather than wait forever.
		fprintf(stderr, "emu nccl: ncclCommInitRank: unique id \"%.40s\" was not made by this process (%d): the emulator connects the ranks of one process only\n",
		        id.internal, (int)getpid());
		return ncclInvalidUsage;
	}
	Comm* c = new Comm;
	c->rank = rank;
	if (cuCtxGetCurrent(&c->ctx) != 0 || !c->ctx || cuMemAlloc_v2(&c->buf, kBuffer) != 0) {
		delete c;
		return ncclUnhandledCudaError;
	}
	if (ncclResult_t r = join(c, std::string(id.internal, sizeof id.internal), nranks)) {
		cuMemFree_v2(c->buf);
		delete c;
		return r;
	}
	DriverLock l;
	comms.insert(c);
	*out = c;
	return ncclSuccess;
}

// drop deletes a clique once no communicator and no queued gate needs it.
static void drop(Clique* q) {
	if (q->live > 0 || q->gates > 0) return;
	for (auto& o : q->ops) delete o.second;
	delete q;
}

// release frees c's memory in c's context, whichever thread calls, as NCCL
// sets its device itself.
static void release(Comm* c) {
	CUcontext cur = nullptr;
	cuCtxGetCurrent(&cur);
	if (cuCtxSetCurrent(c->ctx) == 0) {
		cuMemFree_v2(c->buf);
		cuCtxSetCurrent(cur);
	}
	Clique* q = c->q;
	q->ranks[c->rank] = nullptr;
	comms.erase(c);
	delete c;
	q->live--;
	drop(q);
}

API ncclResult_t ncclCommDestroy(Comm* c) {
	DriverLock l;
	if (!comms.count(c)) return ncclInvalidArgument;
	release(c); // cuMemFree_v2 first waits for the queued work, as ncclCommDestroy does
	return ncclSuccess;
}

// ncclCommAbort ends c at once: every pending and future collective of its
// clique completes without moving data and the other ranks' asynchronous
// error becomes ncclRemoteError.
API ncclResult_t ncclCommAbort(Comm* c) {
	DriverLock l;
	if (!comms.count(c)) return ncclInvalidArgument;
	c->q->aborted = true;
	for (Comm* o : c->q->ranks)
		if (o && o != c) o->async = ncclRemoteError;
	release(c);
	return ncclSuccess;
}

API ncclResult_t ncclCommGetAsyncError(Comm* c, ncclResult_t* r) {
	DriverLock l;
	if (!comms.count(c) || !r) return ncclInvalidArgument;
	*r = c->async;
	return ncclSuccess;
}

static size_t elem_size(int dt) { return dt == ncclFloat64 ? 8 : dt == ncclFloat32 ? 4 : 2; }

// widen reads element i of p as float (F16, BF16, F32; F64 uses wide64).
static float widen(int dt, const char* p, size_t i) {
	uint16_t h;
	float f;
	switch (dt) {
	case ncclFloat32: memcpy(&f, p + 4 * i, 4); return f;
	case ncclFloat16: memcpy(&h, p + 2 * i, 2); return (float)emu_f16_to_f64(h);
	default: memcpy(&h, p + 2 * i, 2); return (float)emu_bf16_to_f64(h);
	}
}

static void narrow(int dt, char* p, size_t i, float v) {
	uint16_t h;
	switch (dt) {
	case ncclFloat32: memcpy(p + 4 * i, &v, 4); return;
	case ncclFloat16: h = emu_narrow(v, 5, 10); break;
	default: h = emu_narrow(v, 8, 7);
	}
	memcpy(p + 2 * i, &h, 2);
}

// reduce writes into element i of every out the reduction of element i of
// every in, added in rank order.
static void reduce(const Part& p0, const std::vector<const char*>& in, const std::vector<char*>& out, size_t i) {
	int n = (int)in.size();
	bool avg = p0.op == ncclAvg && n > 1;
	if (p0.dt == ncclFloat64) {
		double acc, x;
		memcpy(&acc, in[0] + 8 * i, 8);
		for (int r = 1; r < n; r++) {
			memcpy(&x, in[r] + 8 * i, 8);
			acc += x;
		}
		if (avg) acc /= n;
		for (char* o : out) memcpy(o + 8 * i, &acc, 8);
		return;
	}
	float acc = widen(p0.dt, in[0], i);
	for (int r = 1; r < n; r++) acc += widen(p0.dt, in[r], i);
	if (avg) acc /= (float)n;
	for (char* o : out) narrow(p0.dt, o, i, acc);
}

// same reports whether every rank passed the same collective.
static bool same(const Op* o) {
	const Part& a = o->parts[0];
	for (const Part& b : o->parts)
		if (b.kind != a.kind || b.count != a.count || b.dt != a.dt || b.op != a.op || b.root != a.root) return false;
	return true;
}

// execute moves the data of every rank's part.
static void execute(Clique* q, Op* o) {
	const Part& p0 = o->parts[0];
	int n = q->n;
	size_t es = elem_size(p0.dt), count = p0.count;
	std::vector<const char*> in(n);
	std::vector<char*> out(n);
	for (int r = 0; r < n; r++) in[r] = o->parts[r].send, out[r] = o->parts[r].recv;
	switch (p0.kind) {
	case kAllReduce:
		for (size_t i = 0; i < count; i++) reduce(p0, in, out, i);
		break;
	case kReduceScatter:
		for (int p = 0; p < n; p++) {
			std::vector<const char*> slice(n);
			for (int r = 0; r < n; r++) slice[r] = in[r] + p * count * es;
			std::vector<char*> one{out[p]};
			for (size_t i = 0; i < count; i++) reduce(p0, slice, one, i);
		}
		break;
	case kAllGather:
		for (int p = 0; p < n; p++)
			for (int r = 0; r < n; r++) memmove(out[p] + r * count * es, in[r], count * es);
		break;
	case kBroadcast:
		for (int p = 0; p < n; p++)
			if (p != p0.root) memmove(out[p], in[p0.root], count * es);
		memmove(out[p0.root], in[p0.root], count * es);
		break;
	}
}

// Gate is what a rank's queued item knows: its clique, collective and rank.
struct Gate {
	Clique* q;
	unsigned long long seq;
	int rank;
};

// ready runs under the driver lock, when the rank's stream has reached the
// gate: the collective runs once every rank has joined and every other
// rank's stream has run up to its own gate.
static int ready(void* arg) {
	Gate* g = (Gate*)arg;
	Op* o = g->q->ops[g->seq];
	if (o->done) return 1;
	if (g->q->aborted) return o->done = true;
	if (o->njoined < g->q->n) return 0;
	for (int r = 0; r < g->q->n; r++)
		if (r != g->rank && !emu_run_c(o->parts[r].s, o->parts[r].pos)) return 0;
	if (same(o)) {
		execute(g->q, o);
	} else {
		fprintf(stderr, "emu nccl: collective %llu: the ranks called different collectives or counts (rank 0: %s of %zu)\n", g->seq,
		        kind_names[o->parts[0].kind], o->parts[0].count);
		for (Comm* c : g->q->ranks)
			if (c) c->async = ncclInvalidUsage;
	}
	return o->done = true;
}

// finish runs after the gate: the last rank's frees the collective.
static void finish(void* arg) {
	Gate* g = (Gate*)arg;
	Clique* q = g->q;
	auto it = q->ops.find(g->seq);
	Op* o = it->second;
	if (++o->finished == o->njoined && (o->njoined == q->n || q->aborted)) {
		delete o;
		q->ops.erase(it);
	}
	delete g;
	q->gates--;
	drop(q);
}

// enqueue checks a rank's part and queues its gate on the part's stream.
static ncclResult_t enqueue(Comm* c, Part p) {
	bool reduces = p.kind == kAllReduce || p.kind == kReduceScatter;
	if (p.dt < ncclFloat16 || p.dt > ncclBfloat16 || (reduces && p.op != ncclSum && p.op != ncclAvg)) return ncclInvalidArgument;
	DriverLock l;
	if (!comms.count(c) || (p.kind == kBroadcast && (p.root < 0 || p.root >= c->q->n))) return ncclInvalidArgument;
	if (!p.send || !p.recv) return ncclInvalidArgument;
	if (c->q->aborted) return ncclRemoteError;
	Clique* q = c->q;
	Op*& o = q->ops[c->seq];
	if (!o) {
		o = new Op;
		o->parts.resize(q->n);
		o->joined.assign(q->n, false);
	}
	Gate* g = new Gate{q, c->seq, c->rank};
	if (emu_enqueue_gate_c(p.s, ready, finish, g, &p.pos) != 0) {
		delete g;
		if (o->njoined == 0) {
			delete o;
			q->ops.erase(c->seq);
		}
		return ncclUnhandledCudaError;
	}
	c->seq++;
	q->gates++;
	o->parts[c->rank] = p;
	o->joined[c->rank] = true;
	o->njoined++;
	return ncclSuccess;
}

API ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, int dt, int op, Comm* c, CUstream s) {
	return enqueue(c, Part{kAllReduce, (const char*)send, (char*)recv, count, dt, op, 0, s, 0});
}

API ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, int dt, int op, Comm* c, CUstream s) {
	return enqueue(c, Part{kReduceScatter, (const char*)send, (char*)recv, count, dt, op, 0, s, 0});
}

API ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, int dt, Comm* c, CUstream s) {
	return enqueue(c, Part{kAllGather, (const char*)send, (char*)recv, count, dt, ncclSum, 0, s, 0});
}

API ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, int dt, int root, Comm* c, CUstream s) {
	return enqueue(c, Part{kBroadcast, (const char*)send, (char*)recv, count, dt, ncclSum, root, s, 0});
}
