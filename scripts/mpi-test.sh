#!/usr/bin/env bash
# mpi-test.sh builds package parallel with the mpi build tag and runs its
# MPI tests, as CI does: TestMPI launches the test binary under
# `mpirun --allow-run-as-root --oversubscribe -np 2` (adding `--mca plm
# isolated` when neither ssh nor rsh is installed) and fails unless both
# ranks pass the collectives, the abort checks and the 64 MiB bandwidth
# measurement, each launch within 60 s. Then it runs the transformer
# example over MPI (see below).
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

# The transformer example launched as MPI processes, one per rank, rank 0
# reporting, must report the same final loss as the same run in one
# process (goroutine ranks): the mean over every data-parallel copy's part
# of the batch, not rank 0's. First two ranks with ZeRO stage 1 (rank 0's
# optimizer state is half the model's Adam state), then a mesh of tensor
# parallelism 2 × pipeline 2 (4 processes, their communicators split from
# MPI's world). Last the same mesh with BF16 parameters and F32 main
# gradients (--grad-f32), accumulated over 2 micro-batches.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -tags mpi -o "$bin/transformer" ./examples/transformer
extra=()
if ! command -v ssh >/dev/null && ! command -v rsh >/dev/null; then extra=(--mca plm isolated); fi
small=(--data "$(go env GOROOT)/src/fmt" --steps 3 --batch 4 --context 32 --layers 2 --width 32 --heads 2 --eval-batches 1 --sample 0)
loss() { grep -o '"final_loss": [-0-9.e+]*' "$1" | awk '{print $2}'; }
# same NAME NP FLAGS...: the example over NP MPI processes and in one
# process with FLAGS, and the two final losses equal within 1e-6.
same() {
	local name=$1 np=$2
	shift 2
	timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none "${extra[@]}" -np "$np" "$bin/transformer" --mpi "$@" \
		"${small[@]}" --report "$bin/$name-mpi.json"
	grep -q '"steps": 3' "$bin/$name-mpi.json"
	"$bin/transformer" "$@" "${small[@]}" --report "$bin/$name-inproc.json" >/dev/null
	awk -v a="$(loss "$bin/$name-mpi.json")" -v b="$(loss "$bin/$name-inproc.json")" -v n="$name" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		if (a == "" || b == "" || d > 1e-6 * (b < 0 ? -b : b)) { print "mpi-test: " n ": final loss over MPI " a " != in process " b > "/dev/stderr"; exit 1 }
		print "mpi-test: " n ": final loss " a " over MPI, " b " in process" }'
}
same zero1 2 --ranks 2 --zero 1
same tp2pp2 4 --ranks 4 --tp 2 --pp 2 --accum 2 --tie-embeddings=false
same gradf32 4 --ranks 4 --tp 2 --pp 2 --accum 2 --tie-embeddings=false --amp bf16 --amp-params --grad-f32

# A rank that fails must not leave the others waiting: under a capacity
# between the two stages' peaks (the in-process run's extra.ranks) the
# last stage's ranks run out of memory, and every process, stage 0's too,
# must return its error within 60 s. mpirun is told not to kill the
# others when one exits (orte_abort_on_non_zero_status 0): each returns
# on its own, through the mesh's abort.
peaks=$(awk '/"ranks": \[/ {r = 1} r && /"total"/ {gsub(/[^0-9]/, ""); print} r && /\]/ {r = 0}' "$bin/tp2pp2-inproc.json" | sort -n | uniq)
lo=$(echo "$peaks" | head -1) hi=$(echo "$peaks" | tail -1)
if [ -z "$lo" ] || [ "$lo" = "$hi" ]; then echo "mpi-test: the stages' peaks ($lo, $hi) do not differ: no capacity fails one stage only" >&2; exit 1; fi
limit=$(((lo + hi) / 2))
rc=0
timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none "${extra[@]}" --mca orte_abort_on_non_zero_status 0 -np 4 "$bin/transformer" --mpi \
	--ranks 4 --tp 2 --pp 2 --accum 2 --tie-embeddings=false "${small[@]}" --mem-limit "$limit" >"$bin/fail.log" 2>&1 || rc=$?
failed=$({ grep -ao 'transformer: rank [0-9]*: ' "$bin/fail.log" || true; } | sort -u | wc -l)
if [ "$rc" = 124 ] || [ "$failed" != 4 ] || ! grep -q 'out of memory' "$bin/fail.log" || [ "$(grep -ao 'transformer: rank [01]: .*aborted' "$bin/fail.log" | wc -l)" != 2 ]; then
	cat "$bin/fail.log" >&2
	echo "mpi-test: with --mem-limit $limit (stage peaks $lo, $hi): exit $rc, $failed of 4 ranks returned an error (want 4, stage 0's naming the abort)" >&2
	exit 1
fi
echo "mpi-test: --mem-limit $limit: stage 1 ran out of memory and all 4 ranks returned the error (no deadlock)"
echo "mpi-test: the example ran as 2 MPI ranks (ZeRO 1) and as 4 (tp 2 × pp 2, f32 and bf16 with --grad-f32)"
