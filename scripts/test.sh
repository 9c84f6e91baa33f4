#!/usr/bin/env bash
# test.sh runs every test of the project, as CI does: vet, the whole suite
# (the cuda device's NVRTC compile check and the conformance suite on the
# emulated cuda device included), the race detector on the concurrent
# packages, the pure-Go kernels (-tags noasm), and the multi-process MPI
# test. On a machine without OpenMPI, Chromium or NVRTC it installs Debian's
# packages first (apt-get; sudo when not root): NVRTC (libnvrtc11.2) is in
# Debian's non-free component, added as
# /etc/apt/sources.list.d/headroom-nonfree.sources (deb822, the URIs,
# suites and key of /etc/apt/sources.list.d/debian.sources) when no
# source has it yet. The race and noasm runs set
# HEADROOM_CONFORMANCE_DTYPES=f32: the conformance suites then check F32
# only (the full run, every dtype, is the plain go test above).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
apt_install() {
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"
}
if ! command -v mpirun >/dev/null || ! pkg-config --exists ompi 2>/dev/null; then
	apt_install openmpi-bin libopenmpi-dev pkg-config
fi
# The memory viewer's browser test (device's TestViewerInBrowser) drives
# Debian's headless Chromium; it skips where there is none.
if ! command -v chromium >/dev/null; then
	apt_install chromium
fi
have_nvrtc() {
	ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' || ls /usr/lib/*/libnvrtc.so.* >/dev/null 2>&1
}
if ! have_nvrtc; then
	src=/etc/apt/sources.list.d/debian.sources
	if ! grep -rqs 'non-free\b' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		if [ ! -r "$src" ]; then
			echo "test.sh: NVRTC is missing and $src is not there to copy: add Debian's contrib and non-free components by hand and apt-get install libnvrtc11.2" >&2
			exit 1
		fi
		# One stanza per stanza of debian.sources: its Types, URIs, Suites and
		# Signed-By, with the contrib and non-free components.
		awk 'BEGIN { RS = ""; ORS = "\n\n" }
			{
				n = split($0, lines, "\n"); out = ""
				for (i = 1; i <= n; i++)
					if (lines[i] ~ /^(Types|URIs|Suites|Signed-By):/) out = out lines[i] "\n"
				print out "Components: contrib non-free"
			}' "$src" | $SUDO tee /etc/apt/sources.list.d/headroom-nonfree.sources >/dev/null
	fi
	apt_install libnvrtc11.2
fi
# The NVRTC compile check of the cuda kernels (device/cuda's
# TestKernelsCompile) fails instead of skipping when NVRTC is missing.
export HEADROOM_REQUIRE_NVRTC=1
set -x
go vet ./...
go test ./...
HEADROOM_CONFORMANCE_DTYPES=f32 go test -race ./device/... ./autograd/... ./internal/... ./parallel/...
HEADROOM_CONFORMANCE_DTYPES=f32 go test -tags noasm ./internal/kernels/... ./device/...
scripts/mpi-test.sh
