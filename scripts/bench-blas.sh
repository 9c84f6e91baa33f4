#!/usr/bin/env bash
# bench-blas.sh compares headroom's float32 GEMM with OpenBLAS's cblas_sgemm
# on the same square sizes, interleaving the two programs so that both see
# the same machine state, and prints each pair and the median ratio.
#
# Usage: scripts/bench-blas.sh [SIZE ...]        (default: 1024)
#
# A SIZE is N, comparing BenchmarkGEMM/f32/N with an N³ cblas_sgemm, or
# NAME=SPEC, comparing BenchmarkGEMM/f32/NAME with cblas_sgemm on SPEC
# (MxNxK:XY, X and Y each N or T; see scripts/blas/sgemm.c), for example
# linear_4096x768x768=4096x768x768:NT.
#
# Environment:
#   THREADS            threads for both (default 2): OPENBLAS_NUM_THREADS
#                      and GOMAXPROCS
#   OPENBLAS_CORETYPE  OpenBLAS kernel; default SkylakeX on any CPU with
#                      AVX-512 (Intel or AMD Zen 4/5), Zen on other AMD,
#                      else Haswell; the line "OpenBLAS core" says which
#                      ran and why, and a core from the environment that
#                      is not an AVX-512 one on an AVX-512 CPU is named in a
#                      warning beside every median (the ratio flatters)
#   RUNS               interleaved rounds (default 3)
#   BENCH_SECONDS      minimum seconds per measurement (default 2)
#
# It installs nothing: it needs a C compiler and OpenBLAS's headers and
# library (Debian/Ubuntu: apt-get install -y libopenblas-dev).
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1024)
threads=${THREADS:-2}
runs=${RUNS:-3}
secs=${BENCH_SECONDS:-2}

coretype_from=environment
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
	# OpenBLAS's Zen core uses its AVX2 (Haswell) kernels; on Zen 4 and 5,
	# which have AVX-512, SkylakeX's AVX-512 kernels are about twice as fast.
	if grep -qw avx512f /proc/cpuinfo; then
		OPENBLAS_CORETYPE=SkylakeX coretype_from="AVX-512 (avx512f in /proc/cpuinfo)"
	elif grep -q AuthenticAMD /proc/cpuinfo; then
		OPENBLAS_CORETYPE=Zen coretype_from="AMD without AVX-512"
	else
		OPENBLAS_CORETYPE=Haswell coretype_from="no AVX-512"
	fi
fi
export OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=$threads GOMAXPROCS=$threads BENCH_SECONDS=$secs
# A core set by the environment that is not one of OpenBLAS's AVX-512
# cores, on a CPU with AVX-512, measures headroom against a reference
# about half as fast as it could be: say so beside every result.
flatters=""
if grep -qw avx512f /proc/cpuinfo; then
	case "$OPENBLAS_CORETYPE" in
	SkylakeX | Cooperlake | SapphireRapids) ;;
	*) flatters="WARNING: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE ($coretype_from) runs OpenBLAS's non-AVX-512 kernels on this AVX-512 CPU: the ratio flatters headroom; unset it (the script then picks SkylakeX)" ;;
	esac
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
if ! "$cc" -O2 -o "$tmp/sgemm" scripts/blas/sgemm.c -lopenblas 2>"$tmp/cc.log"; then
	cat "$tmp/cc.log" >&2
	echo "bench-blas: cannot build against OpenBLAS; install it with: apt-get install -y libopenblas-dev" >&2
	exit 1
fi
go test -c -o "$tmp/kernels.test" ./internal/kernels

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), threads=$threads"
echo "OpenBLAS core: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE (from: $coretype_from)"
echo "go: $(go version | cut -d' ' -f3-)"
if [ -n "$flatters" ]; then
	echo "$flatters"
	echo "bench-blas: $flatters" >&2
fi

ours() { # GFLOP/s of BenchmarkGEMM/f32/$1
	"$tmp/kernels.test" -test.run '^$' -test.bench "^BenchmarkGEMM\$/^f32\$/^$1\$" \
		-test.benchtime "${secs}s" -test.cpu "$threads" |
		awk '/GFLOP\/s/ { for (i = 2; i <= NF; i++) if ($i == "GFLOP/s") print $(i-1) }'
}
theirs() { # GFLOP/s of cblas_sgemm on $1
	"$tmp/sgemm" "$1" | awk '{ print $5 }'
}

for size in "${sizes[@]}"; do
	name=${size%%=*} spec=${size#*=} label=$size
	if [ "$name" = "$size" ]; then
		label="$size³"
	fi
	ratios=()
	for r in $(seq "$runs"); do
		a=$(ours "$name")
		b=$(theirs "$spec")
		if [ -z "$a" ] || [ -z "$b" ]; then
			echo "bench-blas: no result for $size (unknown benchmark name?)" >&2
			exit 1
		fi
		ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')
		ratios+=("$ratio")
		printf '%s run %d: headroom %s GFLOP/s, OpenBLAS %s GFLOP/s, ratio %s\n' "$label" "$r" "$a" "$b" "$ratio"
	done
	median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	printf '%s median ratio headroom/OpenBLAS over %d runs: %s%s\n' "$label" "$runs" "$median" "${flatters:+ ($flatters)}"
done
