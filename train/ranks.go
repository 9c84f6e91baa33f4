package train

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/device/cpu"
	"github.com/headroom-ml/headroom/device/cuda"
	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/nn"
	"github.com/headroom-ml/headroom/parallel"
)

// Parallel reports whether the flags ask for data parallelism: --ranks
// above 1, --zero, --offload or --mpi.
func (c *Common) Parallel() bool { return c.Ranks > 1 || c.Zero != 0 || c.Offload || c.MPI }

// mpiComm opens this process's MPI communicator; the mpi build sets it
// (mpi.go). Nil in the default build.
var mpiComm func() (parallel.Communicator, func() error, error)

// CheckParallel checks --ranks, --zero, --offload and --accum: the
// global batch (--batch) must split evenly over the ranks and each rank's
// part over the micro-batches, ZeRO stages are 0 to 3, offload needs
// stage 1, 2 or 3, and memory alerts of data-parallel runs are not
// available yet (their snapshots are: SaveShard). Its errors are *UsageError values.
func (c *Common) CheckParallel() error {
	switch {
	case c.Ranks < 1:
		return Usagef("--ranks %d: want ≥ 1", c.Ranks)
	case c.MPI && mpiComm == nil:
		return Usagef("--mpi: this program was built without MPI: build it with -tags mpi (cgo and OpenMPI; see docs/MPI.md)")
	case c.Zero < 0 || c.Zero > 3:
		return Usagef("--zero %d: want 0, 1, 2 or 3", c.Zero)
	case c.Offload && c.Zero == 0:
		return Usagef("--offload needs --zero 1, 2 or 3 (the optimizer's shard moves to the host)")
	case c.Split():
		return nil // CheckSplit checked the batch and refused what does not combine
	case c.Accum >= 1 && c.Batch%(c.Ranks*c.Accum) != 0:
		if c.Ranks == 1 {
			return Usagef("--batch %d does not split into --accum %d micro-batches: want a multiple of %d", c.Batch, c.Accum, c.Accum)
		}
		return Usagef("--batch %d does not split over --ranks %d × --accum %d: want a multiple of %d", c.Batch, c.Ranks, c.Accum, c.Ranks*c.Accum)
	case c.Parallel() && (c.MemAlert != 0 || c.MemLog != ""):
		return Usagef("--mem-alert and --mem-log with --ranks, --zero or --offload: not available yet")
	}
	return nil
}

// Rank is one rank of a data-parallel run: its communicator, its compute
// device and, with --offload, its host device.
type Rank struct {
	Comm parallel.Communicator
	Dev  *device.Device
	Host *device.Device
	// Via says how the ranks communicate, for the run's header: "in-process
	// group", "NCCL", "MPI", or the in-process group staged through the
	// host when NCCL is not there.
	Via string

	stage                *device.Device // --mpi on cuda: the host that stages the GPU's tensors
	trained, hostTrained device.Stats   // at Trained
	done                 bool
}

// Trained records the rank's device statistics at the end of training,
// for rankPeaks: what comes after (evaluation on rank 0, and under ZeRO
// stage 3 gathering the whole model for it) does not count.
func (r *Rank) Trained() {
	r.trained, r.done = r.Dev.Stats(), true
	if r.Host != nil {
		r.hostTrained = r.Host.Stats()
	}
}

// RunRanks runs f for each of --ranks ranks, each on its own goroutine
// with its own devices — rank r on cpu:r, or with --device cuda:K on the
// GPU cuda:K+r (--device cuda is cuda:0), of the given capacity, and with
// --offload the host cpu:(100+r) without a limit — and returns their
// errors as parallel.Run does (the failed rank's first). It returns the
// ranks so that their devices' statistics can be read afterwards. Cuda
// ranks communicate through NCCL when it loads, else through the
// in-process group, staged through the host (parallel.StageBytes).
//
// With --mpi the process is one rank of an mpirun launch: f runs once, for
// that rank (on cuda:K+l for local rank l, the rank's index on its node),
// and the returned slice holds it alone.
func (c *Common) RunRanks(capacity int64, f func(r *Rank) error) ([]*Rank, error) {
	if c.MPI {
		return c.runMPI(capacity, f)
	}
	ranks := make([]*Rank, c.Ranks)
	devs := make([]*device.Device, c.Ranks)
	for i := range ranks {
		dev, err := c.rankDevice(i, capacity)
		if err != nil {
			closeRanks(ranks[:i])
			return nil, err
		}
		ranks[i], devs[i] = &Rank{Dev: dev}, dev
		if c.Offload || c.StepInBackward { // ZeRO-Offload's host, or the step-in-backward undo copies'
			ranks[i].Host = cpu.New(100+i, device.Options{})
		}
	}
	comms, via, err := group(devs)
	if err != nil {
		closeRanks(ranks)
		return nil, err
	}
	for i, cm := range comms {
		ranks[i].Comm, ranks[i].Via = cm, via
	}
	err = parallel.Run(comms, func(cm parallel.Communicator) error { return f(ranks[cm.Rank()]) })
	if cerr := errors.Join(closeComms(comms...), closeRanks(ranks)); err == nil {
		err = cerr
	}
	return ranks, err
}

// rankDevice opens the compute device of rank i (its index on this
// node under --mpi): cpu:i, or cuda:K+i for --device cuda:K.
func (c *Common) rankDevice(i int, capacity int64) (*device.Device, error) {
	o := device.Options{Capacity: capacity}
	kind, first, err := ParseDevice(c.Device)
	if err != nil {
		return nil, err
	}
	if kind == "cpu" {
		return cpu.New(i, o), nil
	}
	return OpenDevice(fmt.Sprintf("cuda:%d", first+i), o)
}

// group returns the in-process communicators of ranks on devs and what
// they are: NCCL for cuda ranks when libnccl loads, else the in-process
// group (staged through the host for cuda ranks, with the reason).
func group(devs []*device.Device) ([]parallel.Communicator, string, error) {
	if !isCUDA(devs[0]) {
		return parallel.NewGroup(len(devs)), "in-process group", nil
	}
	comms, err := parallel.NewNCCLGroup(devs)
	switch {
	case err == nil:
		return comms, "NCCL", nil
	case !errors.Is(err, parallel.ErrNoNCCL):
		return nil, "", fmt.Errorf("NCCL for %d ranks: %w", len(devs), err)
	}
	return parallel.NewGroup(len(devs)), "in-process group staged through the host: no NCCL (" + err.Error() + ")", nil
}

// closeComms closes the NCCL communicators among comms (what NCCL holds
// on the devices goes back before they close).
func closeComms(comms ...parallel.Communicator) error {
	var errs []error
	for _, c := range comms {
		if n, ok := c.(*parallel.NCCL); ok {
			errs = append(errs, n.Close())
		}
	}
	return errors.Join(errs...)
}

// isCUDA reports whether dev is a GPU.
func isCUDA(dev *device.Device) bool { return strings.HasPrefix(dev.Name(), "cuda:") }

// checkGPUs checks, before any work, that the GPUs the ranks need exist:
// cuda:first…cuda:first+N−1 in process, cuda:first+l under --mpi (l the
// process's local rank). When the driver does not load it says nothing:
// opening the device then fails with a *DeviceError.
func (c *Common) checkGPUs(first int) error {
	n, err := cuda.Available()
	if err != nil {
		return nil
	}
	if c.MPI {
		l := localRank(-1)
		if l >= 0 && first+l >= n {
			return Usagef("--mpi on --device %s: the process of local rank %d needs cuda:%d, but this node has %d GPUs (cuda:0…cuda:%d): start at most %d processes per node", c.Device, l, first+l, n, n-1, max(n-first, 0))
		}
		return nil
	}
	if first+c.Ranks > n {
		return Usagef("--ranks %d on --device %s: the ranks need cuda:%d…cuda:%d, but the driver has %d GPUs (cuda:0…cuda:%d): want --ranks ≤ %d", c.Ranks, c.Device, first, first+c.Ranks-1, n, n-1, max(n-first, 0))
	}
	return nil
}

// localRank returns this process's rank on its node as the launcher
// tells it (OpenMPI, MPICH, Slurm), or def when none does.
func localRank(def int) int {
	for _, k := range []string{"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"} {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v >= 0 {
			return v
		}
	}
	return def
}

// closeRanks closes the ranks' devices (their statistics stay readable) and
// returns what they still held as *device.LeakError values.
func closeRanks(ranks []*Rank) error {
	var errs []error
	for _, r := range ranks {
		for _, d := range []*device.Device{r.Dev, r.Host, r.stage} {
			if d != nil {
				errs = append(errs, d.Close())
			}
		}
	}
	return errors.Join(errs...)
}

// ModelBuilder returns the builder a program makes its model with: under
// --zero 3 a deferred one (nn.NewDeferredBuilder), whose parameters get no
// storage until the rank's DDP writes its shard of them from the
// builder's records, so that no rank ever holds the whole model; else
// nn.NewBuilder. The values are the same either way.
func (c *Common) ModelBuilder(dev *device.Device, dt dtype.DType, seed uint64) *nn.Builder {
	if c.Zero == 3 {
		return nn.NewDeferredBuilder(dev, dt, seed)
	}
	return nn.NewBuilder(dev, dt, seed)
}

// DDP wraps m for the rank with --zero and --offload; b, when not nil, is
// the builder that made m (a deferred one's parameters are written from
// its records). Moving the parameters into the flat buffer holds them
// twice for a moment; the device's peaks are reset afterwards, so that
// they show training.
func (r *Rank) DDP(c *Common, m nn.Module, b *nn.Builder) (*parallel.DDP, error) {
	cfg := parallel.DDPConfig{Zero: c.Zero, Builder: b}
	if c.Offload { // otherwise the host, if any, holds --step-in-backward's undo copies
		cfg.Host = r.Host
	}
	d, err := parallel.NewDDP(r.Comm, m, cfg)
	if err != nil {
		return nil, err
	}
	r.Dev.ResetPeak()
	return d, nil
}

// rankPeaks returns the peak bytes of each rank's compute device and, when
// the ranks have hosts, of each host (nil otherwise): as recorded by
// Trained, or now for a rank that did not call it.
func rankPeaks(ranks []*Rank) (dev, host []PeakBytes) {
	for _, r := range ranks {
		d, h := r.trained, r.hostTrained
		if !r.done {
			d = r.Dev.Stats()
			if r.Host != nil {
				h = r.Host.Stats()
			}
		}
		dev = append(dev, Peaks(d))
		if r.Host != nil {
			host = append(host, Peaks(h))
		}
	}
	return dev, host
}

// rankTable renders each rank's peak bytes of the model-state tags on its
// device (named by names) and each host's, when host is not nil, as a
// table.
func rankTable(names []string, dev, host []PeakBytes) string {
	s := "rank  device     parameter     gradient    optimizer  communication        total\n"
	row := func(r int, d string, p PeakBytes) string {
		return fmt.Sprintf("%4d  %-8s %11s  %11s  %11s  %13s  %11s\n", r, d, device.FormatBytes(p.Parameter), device.FormatBytes(p.Gradient),
			device.FormatBytes(p.Optimizer), device.FormatBytes(p.Communication), device.FormatBytes(p.Total))
	}
	for r, p := range dev {
		s += row(r, names[r], p)
		if host != nil {
			s += row(r, fmt.Sprintf("cpu:%d", 100+r), host[r])
		}
	}
	return s
}

// runMPI runs f for this process's rank of an mpirun launch.
func (c *Common) runMPI(capacity int64, f func(r *Rank) error) ([]*Rank, error) {
	comm, finalize, err := mpiComm()
	if err != nil {
		return nil, err
	}
	defer finalize()
	if comm.Size() != c.Ranks {
		return nil, fmt.Errorf("--ranks %d, but mpirun started %d processes: give --ranks the -np value", c.Ranks, comm.Size())
	}
	rank := comm.Rank()
	dev, err := c.rankDevice(localRank(rank), capacity)
	if err != nil {
		comm.Abort(err)
		return nil, &parallel.RankError{Rank: rank, Err: err}
	}
	r := &Rank{Comm: comm, Dev: dev, Via: "MPI"}
	if c.Offload || c.StepInBackward {
		r.Host = cpu.New(100+rank, device.Options{})
	}
	ranks := []*Rank{r}
	if isCUDA(dev) {
		if err := r.overMPI(comm); err != nil {
			comm.Abort(err)
			closeRanks(ranks)
			return ranks, &parallel.RankError{Rank: rank, Err: err}
		}
	}
	if err := f(r); err != nil {
		r.Comm.Abort(err)
		closeComms(r.Comm)
		closeRanks(ranks)
		return ranks, &parallel.RankError{Rank: rank, Err: err}
	}
	return ranks, errors.Join(closeComms(r.Comm), closeRanks(ranks))
}

// overMPI gives a cuda rank of an mpirun launch its communicator: NCCL,
// its unique id broadcast over world, when libnccl loads (every process
// decides alike: they run the same build on like nodes), else world
// itself with the GPU's tensors staged through the host device cpu:200+r
// (at most parallel.StageBytes at a time), since MPI moves host memory
// only.
func (r *Rank) overMPI(world parallel.Communicator) error {
	n, err := parallel.NewNCCLRank(world, r.Dev)
	switch {
	case err == nil:
		r.Comm, r.Via = n, "NCCL (unique id over MPI)"
		return nil
	case !errors.Is(err, parallel.ErrNoNCCL):
		return err
	}
	r.stage = cpu.New(200+world.Rank(), device.Options{})
	r.Comm, r.Via = parallel.HostStaged(world, r.stage), "MPI, staged through the host"
	return nil
}

// Follower reports whether ranks is a non-zero rank of an mpirun launch:
// such a process trains but leaves the printing and the report to rank 0.
func Follower(ranks []*Rank) bool { return len(ranks) == 1 && ranks[0].Comm.Rank() != 0 }

// Close closes dev when a function ends, for a deferred call: what the
// device still held (a *device.LeakError) becomes the function's error
// when it had none.
//
//	func run() (err error) {
//		dev := cpu.New(0, device.Options{})
//		defer train.Close(dev, &err)
func Close(dev *device.Device, err *error) {
	if cerr := dev.Close(); *err == nil {
		*err = cerr
	}
}
