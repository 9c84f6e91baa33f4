#!/usr/bin/env bash
# techniques.sh measures every memory technique of the two examples from
# their --report (exact allocator peaks by tag, and time per step), as
# docs/PERFORMANCE.md's "Memory techniques" tables show:
#   resnet18 on MNIST (small stem) and a 16-layer transformer, 2 steps of
#   batch 32, against the plain run.
# Usage: scripts/techniques.sh [steps]   (prints Markdown tables)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-2}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/resnet" ./examples/resnet
go build -o "$bin/transformer" ./examples/transformer
techs=("" "--checkpoint" "--checkpoint-budget 48MiB" "--amp bf16" "--amp bf16 --amp-params" "--amp fp16" "--accum 4" "--amp bf16 --checkpoint --accum 4")
run() { # name binary args...
	local name=$1 prog=$2
	shift 2
	local i=0
	for t in "${techs[@]}"; do
		# shellcheck disable=SC2086
		"$bin/$prog" "$@" $t --report "$bin/$name$i.json" >/dev/null
		i=$((i + 1))
	done
	python3 - "$bin" "$name" "$steps" "${techs[@]}" <<'PY'
import json, sys
d, name, steps, techs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
rows = [json.load(open(f"{d}/{name}{i}.json")) for i in range(len(techs))]
base = rows[0]["peak_bytes"]
mib = lambda b: f"{b/2**20:.2f}"
print(f"\n| {name} | total MiB | × plain | parameter | gradient | optimizer | activation (× plain) | workspace | s/step |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
for t, r in zip(techs, rows):
    p = r["peak_bytes"]
    print(f"| {t or 'plain'} | {mib(p['total'])} | {p['total']/base['total']:.2f} | {mib(p['parameter'])} | {mib(p['gradient'])} | "
          f"{mib(p['optimizer'])} | {mib(p['activation'])} ({p['activation']/base['activation']:.3f}) | {mib(p['workspace'])} | {r['seconds']/steps:.2f} |")
PY
}
run resnet18 resnet --model resnet18 --steps "$steps" --batch 32 --eval-samples 32
run transformer16 transformer --layers 16 --steps "$steps" --batch 32 --sample 0 --eval-batches 1
