package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrNoNCCL: libnccl.so.2 could not be loaded, or it lacks a symbol the
// bindings need.
var ErrNoNCCL = errors.New("no NCCL")

var libNccl = library{"HEADROOM_LIBNCCL", []string{"libnccl.so.2", "libnccl.so"}, ErrNoNCCL}

// NCCL data types (ncclDataType_t) and reductions (ncclRedOp_t) used by the
// bindings.
const (
	NcclFloat32  = 7
	NcclFloat64  = 8
	NcclFloat16  = 6
	NcclBfloat16 = 9

	NcclSum = 0
	NcclAvg = 4
)

// UniqueID is an ncclUniqueId: the 128 bytes that name one communicator
// clique; every rank passes the same one to CommInitRank.
type UniqueID [128]byte

// NCCL is the loaded libnccl.
type NCCL struct {
	lib *handle
	// Version is ncclGetVersion's value (for example 22005 for 2.20.5).
	Version int

	getVersion, getUniqueID, initRank, destroy, abort, asyncError, errorStr uintptr
	allReduce, reduceScatter, allGather, broadcast, groupStart, groupEnd    uintptr
	errorString                                                             func(int32) string
}

var (
	ncclOnce sync.Once
	nccl     *NCCL
	ncclErr  error
)

// LoadNCCL loads libnccl once per process (HEADROOM_LIBNCCL, else
// libnccl.so.2 by the loader's search and the toolkit folders). The error
// errors.Is ErrNoNCCL when the library or a symbol is missing.
func LoadNCCL() (*NCCL, error) {
	ncclOnce.Do(func() { nccl, ncclErr = loadNCCL() })
	return nccl, ncclErr
}

func loadNCCL() (*NCCL, error) {
	h, err := libNccl.open()
	if err != nil {
		return nil, err
	}
	n := &NCCL{lib: h}
	if err := h.bind([]symbol{
		{"ncclGetVersion", &n.getVersion}, {"ncclGetUniqueId", &n.getUniqueID},
		{"ncclCommInitRank", &n.initRank}, {"ncclCommDestroy", &n.destroy},
		{"ncclCommAbort", &n.abort}, {"ncclCommGetAsyncError", &n.asyncError},
		{"ncclGetErrorString", &n.errorStr}, {"ncclAllReduce", &n.allReduce},
		{"ncclReduceScatter", &n.reduceScatter}, {"ncclAllGather", &n.allGather},
		{"ncclBroadcast", &n.broadcast}, {"ncclGroupStart", &n.groupStart}, {"ncclGroupEnd", &n.groupEnd},
	}); err != nil {
		return nil, err
	}
	// A const char* return: bound by RegisterFunc, which copies the string
	// (the pointer is known to exist).
	purego.RegisterFunc(&n.errorString, n.errorStr)
	var v int32
	if err := n.check("ncclGetVersion", sys(n.getVersion, uintptr(unsafe.Pointer(&v)))); err != nil {
		return nil, err
	}
	n.Version = int(v)
	return n, nil
}

// check turns an ncclResult_t into an *Error with NCCL's description.
func (n *NCCL) check(call string, r uintptr) error {
	code := int(int32(r))
	if code == 0 {
		return nil
	}
	return &Error{Call: call, Code: code, Name: ncclResult(code), Desc: n.errorString(int32(code))}
}

func ncclResult(code int) string {
	names := map[int]string{1: "NCCL_UNHANDLED_CUDA_ERROR", 2: "NCCL_SYSTEM_ERROR", 3: "NCCL_INTERNAL_ERROR",
		4: "NCCL_INVALID_ARGUMENT", 5: "NCCL_INVALID_USAGE", 6: "NCCL_REMOTE_ERROR", 7: "NCCL_IN_PROGRESS"}
	if s, ok := names[code]; ok {
		return s
	}
	return fmt.Sprintf("NCCL_RESULT_%d", code)
}

// UniqueID makes a fresh unique id (rank 0 does, and hands it to the others).
func (n *NCCL) UniqueID() (UniqueID, error) {
	var id UniqueID
	err := n.check("ncclGetUniqueId", sys(n.getUniqueID, uintptr(unsafe.Pointer(&id[0]))))
	return id, err
}

// Comm is an ncclComm_t.
type Comm uintptr

// CommInitRank makes rank's communicator of a clique of nranks named by id,
// on the calling thread's current device. It blocks until every rank has
// called it.
func (n *NCCL) CommInitRank(nranks, rank int, id UniqueID) (Comm, error) {
	// ncclCommInitRank(comm*, nranks, ncclUniqueId id, rank): the 128-byte id
	// is passed by value, in memory (System V class MEMORY), so it goes on the
	// stack as 16 words after the six integer registers, of which comm,
	// nranks and rank take the first three.
	//
	// The out-pointer reaches SyscallN inside a slice, where the compiler no
	// longer sees a pointer (go:uintptrescapes covers only arguments
	// converted in the call itself): a stack variable would stay on the
	// goroutine's stack, which a growth or a GC shrink may copy elsewhere
	// before the C call, leaving NCCL to write the communicator into the old
	// stack and the caller with 0. So the communicator is on the heap,
	// pinned for the call.
	c := new(Comm)
	var pin runtime.Pinner
	pin.Pin(c)
	defer pin.Unpin()
	args := make([]uintptr, 0, 6+len(id)/8)
	args = append(args, uintptr(unsafe.Pointer(c)), uintptr(nranks), uintptr(rank), 0, 0, 0)
	for i := 0; i < len(id); i += 8 {
		args = append(args, uintptr(*(*uint64)(unsafe.Pointer(&id[i]))))
	}
	r, _, _ := purego.SyscallN(n.initRank, args...)
	if err := n.check("ncclCommInitRank", r); err != nil {
		return 0, err
	}
	if *c == 0 {
		return 0, errors.New("ncclCommInitRank: succeeded but gave no communicator")
	}
	return *c, nil
}

// Destroy frees a communicator after its queued work.
func (n *NCCL) Destroy(c Comm) error { return n.check("ncclCommDestroy", sys(n.destroy, uintptr(c))) }

// Abort frees a communicator at once, failing its pending work.
func (n *NCCL) Abort(c Comm) error { return n.check("ncclCommAbort", sys(n.abort, uintptr(c))) }

// AsyncError returns the communicator's asynchronous error (nil when none).
func (n *NCCL) AsyncError(c Comm) error {
	var r int32
	if err := n.check("ncclCommGetAsyncError", sys(n.asyncError, uintptr(c), uintptr(unsafe.Pointer(&r)))); err != nil {
		return err
	}
	return n.check("ncclCommGetAsyncError", uintptr(uint32(r)))
}

// AllReduce queues recv = op over ranks of send (count elements of type
// dt) on stream s; send may equal recv.
func (n *NCCL) AllReduce(send, recv DevPtr, count int64, dt, op int, c Comm, s Stream) error {
	return n.check("ncclAllReduce", sys(n.allReduce, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(op), uintptr(c), uintptr(s)))
}

// ReduceScatter queues recv (count elements) = this rank's slice of op
// over ranks of send (nranks·count elements) on stream s.
func (n *NCCL) ReduceScatter(send, recv DevPtr, count int64, dt, op int, c Comm, s Stream) error {
	return n.check("ncclReduceScatter", sys(n.reduceScatter, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(op), uintptr(c), uintptr(s)))
}

// AllGather queues recv (nranks·count elements) = every rank's send
// (count elements) in rank order on stream s; send may be recv's own slot.
func (n *NCCL) AllGather(send, recv DevPtr, count int64, dt int, c Comm, s Stream) error {
	return n.check("ncclAllGather", sys(n.allGather, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(c), uintptr(s)))
}

// Broadcast queues recv = root's send (count elements) on stream s.
func (n *NCCL) Broadcast(send, recv DevPtr, count int64, dt, root int, c Comm, s Stream) error {
	return n.check("ncclBroadcast", sys(n.broadcast, uintptr(send), uintptr(recv), uintptr(count), uintptr(dt), uintptr(root), uintptr(c), uintptr(s)))
}

// GroupStart begins a group of calls that NCCL issues together (needed
// when one thread initialises or drives several ranks).
func (n *NCCL) GroupStart() error { return n.check("ncclGroupStart", sys(n.groupStart)) }

// GroupEnd ends a group begun by GroupStart.
func (n *NCCL) GroupEnd() error { return n.check("ncclGroupEnd", sys(n.groupEnd)) }
