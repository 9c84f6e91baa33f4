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
