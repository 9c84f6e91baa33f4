#!/usr/bin/env bash
# quality-19.sh reruns issue 19's quality measurements and prints them as
# Markdown tables, every number from a run's --report:
#  1. the transformer example at its defaults (2,000 steps) with AdamW and
#     with --optimizer adamw8bit: validation loss, optimizer bytes, samples/s
#     (and samples/s again from 200-step runs of each, alternated 3 times);
#  2. the ResNet example on MNIST (2 epochs) with --optimizer adamw and
#     adamw8bit at --lr 3e-3, and its default SGD: test accuracy;
#  3. the LoRA flow: a base trained at the defaults on --corpus-slice 0:0.8
#     of the Go source corpus (it ends in runtime/pprof), exported with
#     headroom export, then fine-tuned on 0.8:1 (the rest: runtime … vendor)
#     for FT_STEPS steps three ways: every weight, --lora 8, and
#     --lora 8 --lora-base int8 (all at the default --lr 3e-3), and --lora 8
#     at --lr 1e-2; with the base's own loss on 0.8:1. Peaks are by tag over
#     the run (an INT8 base's parameter peak is its F32 --init copy before
#     conversion; the column beside it is at the run's total peak).
# The base is evaluated on a slice by one step at --lr 1e-30 (the example
# has no evaluation-only mode): AdamW's first update is about lr per element,
# below half an F32 ulp of any weight of magnitude above 2e-23, so what is
# evaluated is the base; the "own slice" row checks this against the base
# run's own validation loss, which it must equal.
# Usage: scripts/quality-19.sh [DIR]   (reports and logs go to DIR, default a
# temporary folder that is kept; a run whose report is already in DIR is not
# rerun, so an interrupted script continues and a second call only prints).
# Env: SEED (every run's --seed, default 1), FT_STEPS (default 500), SKIP (a list
# of parts to leave out: transformer, speed, resnet, lora). About 30
# minutes on 2 quiet cores.
set -euo pipefail
cd "$(dirname "$0")/.."
{ # read whole before running: an edit of this file during a run cannot change it
out=${1:-$(mktemp -d)}
mkdir -p "$out"
ft=${FT_STEPS:-500}
seed=${SEED:-1}
skip=${SKIP:-}
go build -o "$out/transformer" ./examples/transformer
go build -o "$out/resnet" ./examples/resnet
go build -o "$out/headroom" ./cmd/headroom
run() { # name program args...: one run, its report at $out/name.json (kept: a rerun skips it)
	local name=$1 prog=$2
	shift 2
	if [[ -s $out/$name.json ]]; then
		echo "== $name: kept from an earlier run" >&2
		return
	fi
	echo "== $name: $prog $* --seed $seed" >&2
	"$out/$prog" "$@" --seed "$seed" --report "$out/$name.json" >"$out/$name.log" 2>&1
}
if [[ $skip != *transformer* ]]; then
	run t-adamw transformer
	run t-adamw8bit transformer --optimizer adamw8bit
fi
if [[ $skip != *speed* ]]; then # samples/s alternated in one stretch of time
	for i in 1 2 3; do
		run s-adamw-$i transformer --steps 200 --sample 0 --eval-batches 1
		run s-adamw8bit-$i transformer --steps 200 --sample 0 --eval-batches 1 --optimizer adamw8bit
	done
fi
if [[ $skip != *resnet* ]]; then
	run r-adamw resnet --optimizer adamw --lr 3e-3
	run r-adamw8bit resnet --optimizer adamw8bit --lr 3e-3
	run r-sgd resnet
fi
if [[ $skip != *lora* ]]; then
	run base transformer --corpus-slice 0:0.8 --save "$out/base.snap"
	[[ -s $out/base.safetensors ]] || "$out/headroom" export "$out/base.snap" "$out/base.safetensors" >&2
	init=(--init "$out/base.safetensors" --sample 0)
	run base-own transformer --corpus-slice 0:0.8 "${init[@]}" --steps 1 --lr 1e-30
	run base-new transformer --corpus-slice 0.8:1 "${init[@]}" --steps 1 --lr 1e-30
	run ft-full transformer --corpus-slice 0.8:1 "${init[@]}" --steps "$ft"
	run ft-lora8 transformer --corpus-slice 0.8:1 "${init[@]}" --steps "$ft" --lora 8
	run ft-qlora8 transformer --corpus-slice 0.8:1 "${init[@]}" --steps "$ft" --lora 8 --lora-base int8
	run ft-lora8-lr1e-2 transformer --corpus-slice 0.8:1 "${init[@]}" --steps "$ft" --lora 8 --lr 1e-2
fi
python3 - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
def rep(n):
    p = f"{d}/{n}.json"
    return json.load(open(p)) if os.path.exists(p) else None
def pk(r, k): return r["peak_bytes"][k]
def pair(title, a, b, metric, scale, unit, digits):
    ra, rb = rep(a), rep(b)
    if not ra or not rb: return
    print(f"\n### {title}\n")
    print(f"| run | {metric} | optimizer bytes | ratio | samples/s | wall s |")
    print("|---|---:|---:|---:|---:|---:|")
    for n, r in ((a, ra), (b, rb)):
        print(f"| {n} | {scale*r['eval']:.{digits}f} | {pk(r,'optimizer'):,} | {pk(r,'optimizer')/pk(ra,'optimizer'):.4f} | {r['samples_per_sec']:.1f} | {r['seconds']:.0f} |")
    print(f"\ndifference ({b} − {a}): {scale*(rb['eval']-ra['eval']):+.{digits}f} {unit}")
pair("Transformer, defaults (2,000 steps): AdamW vs 8-bit AdamW", "t-adamw", "t-adamw8bit", "validation nats/byte", 1, "nats/byte", 4)
pair("ResNet, MNIST, 2 epochs, --lr 3e-3: AdamW vs 8-bit AdamW", "r-adamw", "r-adamw8bit", "test accuracy %", 100, "points", 2)
sp = {o: [r["samples_per_sec"] for i in (1, 2, 3) if (r := rep(f"s-{o}-{i}"))] for o in ("adamw", "adamw8bit")}
if sp["adamw"] and sp["adamw8bit"]:
    print("\ntransformer samples/s, 200 steps, alternated:", ", ".join(f"{o} " + " ".join(f"{v:.1f}" for v in vs) for o, vs in sp.items()),
          f"— 8-bit/F32 {sum(sp['adamw8bit'])/len(sp['adamw8bit']) / (sum(sp['adamw'])/len(sp['adamw'])):.3f}")
s = rep("r-sgd")
if s: print(f"\ndefault SGD (Nesterov, --lr 0.05): test accuracy {100*s['eval']:.2f}%")
rows = [("base (0:0.8), own slice, its run", "base"), ("base, own slice, --init + 1 step at lr 1e-30", "base-own"),
        ("base on 0.8:1 (before fine-tuning)", "base-new"), ("full fine-tune", "ft-full"),
        ("--lora 8", "ft-lora8"), ("--lora 8 --lora-base int8", "ft-qlora8"), ("--lora 8 --lr 1e-2", "ft-lora8-lr1e-2")]
if rep("base"):
    print("\n### LoRA flow: base on --corpus-slice 0:0.8, fine-tuned on 0.8:1\n")
    print("| run | steps | validation nats/byte | trainable params | parameter peak B | parameter at total peak B | gradient B | optimizer B | activation B | total peak B | samples/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for title, n in rows:
        r = rep(n)
        if not r: continue
        lo = (r.get("extra") or {}).get("lora")
        tp = lo["trainable_params"] if lo else r["params"]
        print(f"| {title} | {r['steps']} | {r['eval']:.4f} | {tp:,} | {pk(r,'parameter'):,} | {r['stats']['at_peak']['parameter']:,} | {pk(r,'gradient'):,} | {pk(r,'optimizer'):,} | {pk(r,'activation'):,} | {pk(r,'total'):,} | {r['samples_per_sec']:.1f} |")
print(f"\nreports and logs: {d}")
PY
exit
}
