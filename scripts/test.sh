#!/usr/bin/env bash
# test.sh runs every test of the project, as CI does: vet, the whole suite,
# the race detector on the concurrent packages, the pure-Go kernels
# (-tags noasm), and the multi-process MPI test. On a machine without
# OpenMPI it installs Debian's packages first (apt-get; sudo when not root).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v mpirun >/dev/null || ! pkg-config --exists ompi 2>/dev/null; then
	SUDO=""
	if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openmpi-bin libopenmpi-dev pkg-config
fi
set -x
go vet ./...
go test ./...
go test -race ./device/... ./autograd/... ./internal/... ./parallel/...
go test -tags noasm ./internal/kernels/... ./device/...
scripts/mpi-test.sh
