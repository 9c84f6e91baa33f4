#!/usr/bin/env bash
# gpu-check.sh checks headroom on a machine with an NVIDIA GPU, in under 8
# minutes (each part has its own timeout):
#
#  1. nvidia-smi (fails clearly when there is no GPU or no driver);
#  2. the pure-Go build (CGO_ENABLED=0 go build ./...);
#  3. every test of device/cuda on the real device: the kernels against the
#     cpu device and the conformance suite (HEADROOM_CUDA_REAL=1 go test
#     ./device/cuda);
#  4. the transformer example for 200 steps with --device cuda, and again
#     with --amp bf16 --checkpoint 2;
#  5. GEMM TFLOP/s at 4096³ (F32, BF16) through headroom and through cuBLAS
#     called directly (BenchmarkGemm/*/headroom and */cublas), and the host
#     time of a kernel launch (go test -run x -bench 'Gemm|Launch'
#     ./device/cuda; HEADROOM_CUDA_REAL=1 makes device/cuda's tests use the
#     real driver instead of the emulator);
#  6. the example's samples/s on the cpu device at the same settings (a
#     short run) beside the GPU's.
#
# The timeouts add up to 7 min 20 s.
#
# Usage: scripts/gpu-check.sh [GPU index, default 0]. Exit status: 0 when
# every part passed, 1 when one failed (the summary at the end says which),
# 69 when no GPU can be used.
#
# A GPU machine may have no Go and no NVRTC. `scripts/gpu-check.sh --prepare`,
# run on a machine with Go (and Debian's libnvrtc11.2), puts everything the
# check runs into bin/gpu-check: the test binary of device/cuda, the
# transformer example (both CGO_ENABLED=0) and a gzipped copy of NVRTC
# (39 MB in all, under the device tool's 64 MiB carry). The check
# then uses those binaries when the folder exists (or when there is no Go)
# and the copied NVRTC when the machine has none; carry bin/gpu-check to the
# GPU machine with the checkout.
set -uo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
pre=bin/gpu-check
if [ "${1:-}" = "--prepare" ]; then
	set -e
	mkdir -p "$pre"
	go test -c -o "$pre/cuda.test" ./device/cuda
	go build -o "$pre/transformer" ./examples/transformer
	for f in /usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2 /usr/lib/x86_64-linux-gnu/libnvrtc-builtins.so.11.8; do
		[ -e "$f" ] && gzip -c "$f" >"$pre/$(basename "$f").gz"
	done
	ls -l "$pre"
	exit 0
fi
GPU="${1:-0}"
# gotest PACKAGE ARGS...: the prepared test binary when there is one, else go test.
gotest() {
	local pkg="$1"
	shift
	if [ -x "$pre/cuda.test" ] && [ "$pkg" = ./device/cuda ]; then
		(cd "$pkg" && "$OLDPWD/$pre/cuda.test" "${@/#-/-test.}") # go test runs it in the package's folder
	else
		go test -count=1 "$pkg" "$@"
	fi
}
failed=()
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
if ! ldconfig -p 2>/dev/null | grep -q libnvrtc && [ -e "$pre/libnvrtc.so.11.2.gz" ]; then
	for f in "$pre"/libnvrtc*.gz; do gunzip -c "$f" >"$log/$(basename "$f" .gz)"; done
	export HEADROOM_LIBNVRTC="$log/libnvrtc.so.11.2" LD_LIBRARY_PATH="$log${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	echo "gpu-check: using the NVRTC copied into $pre"
fi
# part NAME SECONDS COMMAND...: runs COMMAND with a timeout, its output in
# $log/NAME.txt (the end of it printed), and records a failure.
part() {
	local name="$1" secs="$2"
	shift 2
	echo
	echo "=== $name (timeout ${secs}s): $*"
	local start=$SECONDS rc
	timeout --kill-after=5 "$secs" "$@" >"$log/$name.txt" 2>&1
	rc=$?
	grep -E -- '--- FAIL|^FAIL|panic' "$log/$name.txt" | head -20
	tail -n 8 "$log/$name.txt"
	if [ $rc -ne 0 ]; then
		[ $rc -eq 124 ] && echo "--- $name: timed out after ${secs}s"
		failed+=("$name (exit $rc)")
	fi
	echo "--- $name: exit $rc in $((SECONDS - start))s"
	return $rc
}
speed() { grep -o '[0-9.]* samples/s' "$log/$1.txt" | tail -1; }

if ! command -v nvidia-smi >/dev/null; then
	echo "gpu-check: no NVIDIA GPU here: nvidia-smi is not installed (no driver); run scripts/test.sh for the emulated cuda device" >&2
	exit 69
fi
if ! part nvidia-smi 20 nvidia-smi; then
	echo "gpu-check: nvidia-smi failed: no usable NVIDIA GPU or driver" >&2
	exit 69
fi
if [ -x "$pre/cuda.test" ] || ! command -v go >/dev/null; then
	[ -x "$pre/cuda.test" ] || { echo "gpu-check: no Go here and no $pre: run scripts/gpu-check.sh --prepare where Go is" >&2; exit 1; }
	echo "gpu-check: using the binaries prepared in $pre"
	cp "$pre/transformer" "$log/transformer"
else
	part build 60 go build ./... || { echo "gpu-check: the build failed" >&2; exit 1; }
	go build -o "$log/transformer" ./examples/transformer || failed+=("build transformer")
fi

part tests 110 env HEADROOM_CUDA_REAL=1 HEADROOM_CUDA_DEVICE="$GPU" \
	gotest ./device/cuda -run . -v -timeout 100s

part cuda 60 "$log/transformer" --device "cuda:$GPU" --steps 200
part cuda-amp-checkpoint 60 "$log/transformer" --device "cuda:$GPU" --steps 200 --amp bf16 --checkpoint 2
part cpu 40 "$log/transformer" --device cpu --steps 20

part benchmarks 90 env HEADROOM_CUDA_REAL=1 HEADROOM_CUDA_DEVICE="$GPU" \
	gotest ./device/cuda -run x -bench 'Gemm|Launch' -benchtime 20x -timeout 80s

echo
echo "=== summary"
grep -E '^Benchmark' "$log/benchmarks.txt"
echo "transformer samples/s: cuda $(speed cuda), cuda --amp bf16 --checkpoint 2 $(speed cuda-amp-checkpoint), cpu $(speed cpu) (same model and batch)"
nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu --format=csv
if [ ${#failed[@]} -gt 0 ]; then
	printf 'gpu-check: FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "gpu-check: all parts passed"
