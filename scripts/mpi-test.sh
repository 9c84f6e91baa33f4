#!/usr/bin/env bash
# mpi-test.sh builds package parallel with the mpi build tag and runs its
# MPI tests, as CI does: TestMPI launches the test binary under
# `mpirun --allow-run-as-root --oversubscribe -np 2` (adding `--mca plm
# isolated` when neither ssh nor rsh is installed) and fails unless both
# ranks pass the collectives, the abort checks and the 64 MiB bandwidth
# measurement, each launch within 60 s.
#
# Usage: scripts/mpi-test.sh [go test flags ...]   (e.g. -v to see the
#                                                   bandwidth; -race)
#
# It installs nothing: it needs cgo (a C compiler), pkg-config and OpenMPI
# (Debian/Ubuntu: apt-get install -y openmpi-bin libopenmpi-dev).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v mpirun >/dev/null || ! pkg-config --exists ompi; then
	echo "mpi-test: OpenMPI not found: apt-get install -y openmpi-bin libopenmpi-dev" >&2
	exit 1
fi
mpirun --version | head -1
export CGO_ENABLED=1
go vet -tags mpi ./parallel
go test -count=1 -tags mpi -run 'MPI' "$@" ./parallel

# The transformer example launched as two MPI processes with ZeRO stage 1:
# each process is one rank; rank 0 reports (its optimizer state is half
# the model's Adam state).
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -tags mpi -o "$bin/transformer" ./examples/transformer
extra=()
if ! command -v ssh >/dev/null && ! command -v rsh >/dev/null; then extra=(--mca plm isolated); fi
timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none "${extra[@]}" -np 2 "$bin/transformer" --mpi --ranks 2 --zero 1 \
	--data "$(go env GOROOT)/src/fmt" --steps 3 --batch 4 --context 32 --layers 2 --width 32 --heads 2 \
	--eval-batches 1 --sample 0 --report "$bin/report.json"
grep -q '"steps": 3' "$bin/report.json"
# The same run in one process (two goroutine ranks) must report the same
# final loss: the mean over both ranks' parts of the batch, not rank 0's.
"$bin/transformer" --ranks 2 --zero 1 \
	--data "$(go env GOROOT)/src/fmt" --steps 3 --batch 4 --context 32 --layers 2 --width 32 --heads 2 \
	--eval-batches 1 --sample 0 --report "$bin/inproc.json" >/dev/null
loss() { grep -o '"final_loss": [-0-9.e+]*' "$1" | awk '{print $2}'; }
awk -v a="$(loss "$bin/report.json")" -v b="$(loss "$bin/inproc.json")" 'BEGIN {
	d = a - b; if (d < 0) d = -d
	if (a == "" || b == "" || d > 1e-6 * (b < 0 ? -b : b)) { print "mpi-test: final loss over MPI " a " != in process " b > "/dev/stderr"; exit 1 }
	print "mpi-test: final loss " a " over MPI, " b " in process" }'
echo "mpi-test: the example ran as 2 MPI ranks"
