#!/usr/bin/env python3
"""PyTorch twin of `headroom bench`: the same two models, the same
optimizers and data, three techniques (plain, amp bf16 = bf16 autocast, checkpoint √n),
on the CPU.

Models (as headroom's nn package builds them):
  resnet       SmallResNet on MNIST 1×28×28: conv 3×3 → 16, BN, ReLU; one
               torchvision BasicBlock per stage of widths 16, 32, 64 (strides
               1, 2, 2); global average pool; fc → 10. 77,754 parameters.
               SGD lr 0.05, Nesterov momentum 0.9, weight decay 5e-4.
  transformer  GPT over bytes: vocabulary 256, context 64, 4 layers × width
               128, 4 heads, biases, tied embeddings, tanh GELU. 834,304
               parameters. AdamW lr 3e-3, betas (0.9, 0.99), weight decay 0.1,
               gradient-norm clip 1.

Data: the MNIST IDX files (gzipped or not) of --mnist and the *.go files under
--corpus, read here without torchvision.

Memory on the CPU: torch has no torch.cuda.max_memory_allocated for host
memory, so the peak is read from torch.profiler's raw memory events
(profile_memory=True): every allocation and free of c10's CPU allocator during
one profiled step, in order. Peak = the bytes live when the step began
(parameters, optimizer state; gradients are set to None between steps) + the
largest running sum of those events. These are exact requested bytes, the
same kind of number as headroom's peak_bytes.total. Where the profiler's raw
events are not available (other torch versions), peak_bytes is 0 and
peak_note says why.

Speed models (headroom's bench.SpeedModels, on a fixed random batch, no loss
run): resnet18 and resnet50 (torchvision's, with headroom's small stem: conv
3×3 stride 1 → 64, BN, ReLU, no max pool; 3×32×32, 10 classes, batch 32, Adam
lr 1e-3), resnet18-64 and resnet50-64 (the same on 3×64×64, batch 32) and gpt6x256 (the GPT below with 6 layers × 256, 4 heads, context 256,
batch 16, AdamW as above with clipping). Techniques plain and amp bf16.

Timing: --threads intra-op and inter-op threads (default 2, headroom's
GOMAXPROCS); --warmup untimed steps (≥ 2), then --timed steps (≥ 5) each
timed alone, the median reported; the profiler runs only in one more step
after them, untimed.

Output: JSON on stdout: the environment (torch, onednn, build_blas,
blas_paths: the resolved BLAS-like libraries mapped into this process after a
matmul, openblas_core and openblas_threads: OpenBLAS's kernel core and its
threads, set to --threads, aten_capability: the vector width of ATen's own
kernels (ATEN_CPU_CAPABILITY caps it), onednn_isa: the instruction set of
oneDNN's convolutions (ONEDNN_MAX_CPU_ISA caps it), threads, interop_threads) and "rows": [{model, technique, params,
batch, steps, warmup, step_seconds, seconds_per_step (the median),
samples_per_sec, speed, final_loss (0 for a speed row), peak_bytes,
peak_note}] and "skipped": [{model, technique, reason}], the runs oneDNN has
no primitive for (amp bf16 convolutions below AVX-512). --probe prints the
environment alone.

Only the standard library and torch are needed. The learning-rate schedules of
the Go examples (cosine with warmup) are not reproduced: over the few steps of
a quick bench both stay near their base rate.
"""

import argparse
import gzip
import json
import math
import os
import random
import re
import statistics
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


# ---------------------------------------------------------------- models


def shortcut(cin, cout, stride):
    """A block's projection shortcut (conv 1×1 and BN), None for identity."""
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = shortcut(cin, cout, stride)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (x if self.down is None else self.down(x)))


class SmallResNet(nn.Module):
    def __init__(self, channels=1, classes=10, widths=(16, 32, 64)):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks.append(BasicBlock(cin, w, 1 if i == 0 else 2))
            cin = w
        self.blocks = nn.ModuleList(blocks)
        self.fc = nn.Linear(cin, classes)
        self.run_blocks = None

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = run(self.blocks, h, self.run_blocks)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.down = shortcut(cin, cout, stride)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return F.relu(h + (x if self.down is None else self.down(x)))


class CifarResNet(SmallResNet):
    """torchvision's ResNet-18/50 (ResNet v1.5: a bottleneck strides in its
    3×3) with headroom's small stem: conv 3×3 stride 1 → 64, BN, ReLU, no
    max pool; 3×32×32 inputs."""

    def __init__(self, bottleneck, layers, classes=10):
        nn.Module.__init__(self)  # SmallResNet's forward, these layers
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for i, n in enumerate(layers):
            width = 64 << i
            for j in range(n):
                stride = 2 if i > 0 and j == 0 else 1
                if bottleneck:
                    blocks.append(Bottleneck(cin, width, stride))
                    cin = width * 4
                else:
                    blocks.append(BasicBlock(cin, width, stride))
                    cin = width
        self.blocks = nn.ModuleList(blocks)
        self.fc = nn.Linear(cin, classes)
        self.run_blocks = None


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.heads)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=256, context=64, layers=4, width=128, heads=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.run_blocks = None
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias") and "ln" not in name:
                nn.init.zeros_(p)

    def forward(self, idx):
        T = idx.shape[1]
        h = self.wte(idx) + self.wpe.weight[:T]
        h = self.ln_f(run(self.blocks, h, self.run_blocks))
        return h @ self.wte.weight.t()  # tied head


def run(blocks, x, how):
    """Runs the blocks plainly, or cut into ⌈√n⌉ segments of which all but the
    last are checkpointed (as headroom's checkpoint.Sequential does)."""
    if how != "sqrt":
        for b in blocks:
            x = b(x)
        return x
    n = len(blocks)
    seg = math.ceil(math.sqrt(n))
    size = math.ceil(n / seg)
    for start in range(0, n, size):
        part = list(blocks[start:start + size])

        def f(h, part=part):
            for b in part:
                h = b(h)
            return h

        x = f(x) if start + size >= n else checkpoint(f, x, use_reentrant=False)
    return x


# ---------------------------------------------------------------- data


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


def load_mnist(folder):
    def find(name):
        for cand in (name, name + ".gz"):
            p = os.path.join(folder, cand)
            if os.path.exists(p):
                return p
        raise FileNotFoundError(f"MNIST file {name}(.gz) not in {folder}")

    x = read_idx(find("train-images-idx3-ubyte")).float().div_(255).sub_(0.1307).div_(0.3081).unsqueeze(1)
    y = read_idx(find("train-labels-idx1-ubyte")).long()
    tx = read_idx(find("t10k-images-idx3-ubyte")).float().div_(255).sub_(0.1307).div_(0.3081).unsqueeze(1)
    ty = read_idx(find("t10k-labels-idx1-ubyte")).long()
    return x, y, tx, ty


def load_corpus(path):
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read()
    parts = []
    for root, _, files in sorted(os.walk(path)):
        for name in sorted(files):
            if name.endswith(".go"):
                with open(os.path.join(root, name), "rb") as f:
                    parts.append(f.read())
    return b"".join(parts)


# ---------------------------------------------------------------- environment


def blas_paths():
    """The resolved paths of the BLAS-like shared objects this process has
    mapped after a matmul: what PyTorch actually calls, whichever library
    the Debian alternative libblas.so.3 points at. headroom bench decides
    from them which BLAS it is (bench.ClassifyBLAS)."""
    a = torch.randn(64, 64)
    (a @ a).sum().item()
    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6:
                continue
            base = os.path.basename(parts[5]).lower()
            if any(k in base for k in ("blas", "mkl", "blis", "atlas")):
                found.add(os.path.realpath(parts[5]))
    return sorted(found)


def openblas(paths, threads):
    """OpenBLAS's kernel core (openblas_get_corename: OPENBLAS_CORETYPE or
    its own detection) and thread count, after setting that to threads;
    ("", 0) without OpenBLAS."""
    import ctypes

    for p in paths:
        if "openblas" in os.path.basename(p).lower():
            lib = ctypes.CDLL(p)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_set_num_threads(threads)
            return lib.openblas_get_corename().decode(), lib.openblas_get_num_threads()
    return "", 0


_onednn_isa = None


def onednn_isa():
    """The instruction set oneDNN's CPU primitives run (its verbose
    header's isa: field, as ONEDNN_MAX_CPU_ISA caps it), read by turning
    verbose mode on for one convolution with this process's stdout
    redirected into a file; "" when oneDNN prints none. oneDNN prints
    that header once per process, so the first answer is kept and
    returned by every later call (main asks again after the steps)."""
    global _onednn_isa
    if _onednn_isa is None:
        _onednn_isa = read_onednn_isa()
    return _onednn_isa


def read_onednn_isa():
    """onednn_isa's one reading of oneDNN's verbose header."""
    import tempfile

    x, w = torch.randn(2, 64, 16, 16), torch.randn(64, 64, 3, 3)
    F.conv2d(x, w)
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+") as f:
        os.dup2(f.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                F.conv2d(x, w)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        for line in f:
            if ",isa:" in line:
                return line.split(",isa:", 1)[1].strip()
    return ""


def environment(threads):
    cfg = torch.__config__.show()
    capability = re.search(r"CPU capability usage: (\S+)", cfg)
    onednn = re.search(r"(?:oneDNN|MKL-DNN) v([0-9][0-9.]*)", cfg)
    build_blas = re.search(r"BLAS_INFO=([^,\s]+)", cfg)
    paths = blas_paths()
    core, blas_threads = openblas(paths, threads)
    return {
        "torch": torch.__version__,
        "onednn": onednn.group(1) if onednn else "",
        "build_blas": build_blas.group(1) if build_blas else "",
        "blas_paths": paths,
        "openblas_core": core,
        "openblas_threads": blas_threads,
        "aten_capability": capability.group(1) if capability else "",
        "onednn_isa": onednn_isa(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
    }


# ---------------------------------------------------------------- bench


def peak_of_step(step, live_bytes):
    """Runs step() under the profiler, outside any timing; returns (peak
    bytes, note)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    try:
        events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
        events.sort(key=lambda e: e.start_us())
        cur = peak = 0
        for e in events:
            cur += e.nbytes()
            peak = max(peak, cur)
        return live_bytes + peak, "torch.profiler raw memory events + live parameters and optimizer state"
    except AttributeError as err:  # another torch version's profiler
        return 0, f"not measured: the profiler's raw memory events are not available here ({err})"


def tensor_bytes(ts):
    return sum(t.numel() * t.element_size() for t in ts if t is not None)


def live_bytes(model, opt):
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    grads = [p.grad for p in model.parameters()]
    buffers = list(model.buffers())
    return tensor_bytes(list(model.parameters()) + buffers + grads + state)


def loss_setup(model_name, args, data, rng):
    """The two loss models on real data: (model, optimizer, batch,
    next_batch, loss_of, clip)."""
    if model_name == "resnet":
        model = SmallResNet()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
        x_all, y_all = data["mnist"][0], data["mnist"][1]
        batch = args.resnet_batch

        def next_batch():
            idx = torch.tensor([rng.randrange(len(y_all)) for _ in range(batch)])
            return x_all[idx], y_all[idx]

        return model, opt, batch, next_batch, classify(model), False
    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.99), weight_decay=0.1)
    text = data["corpus"]
    batch, T = args.gpt_batch, 64

    def next_batch():
        starts = [rng.randrange(len(text) - T - 1) for _ in range(batch)]
        buf = torch.tensor([list(text[s:s + T + 1]) for s in starts], dtype=torch.long)
        return buf[:, :-1], buf[:, 1:]

    return model, opt, batch, next_batch, next_token(model), True


def speed_setup(model_name):
    """The speed models (headroom's bench.SpeedModels) on a fixed random
    batch: (model, optimizer, batch, next_batch, loss_of, clip)."""
    g = torch.Generator().manual_seed(1)
    if model_name in SPEED_RESNETS:
        deep, size = SPEED_RESNETS[model_name]
        model = CifarResNet(deep, (3, 4, 6, 3) if deep else (2, 2, 2, 2))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        batch = 32
        x, y = torch.randn(batch, 3, size, size, generator=g), torch.randint(0, 10, (batch,), generator=g)
        return model, opt, batch, lambda: (x, y), classify(model), False
    model = GPT(vocab=256, context=256, layers=6, width=256, heads=4)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.99), weight_decay=0.1)
    batch = 16
    x, y = torch.randint(0, 256, (batch, 256), generator=g), torch.randint(0, 256, (batch, 256), generator=g)
    return model, opt, batch, lambda: (x, y), next_token(model), True


def classify(model):
    return lambda xb, yb: F.cross_entropy(model(xb), yb)


def next_token(model):
    def loss_of(xb, yb):
        logits = model(xb)
        return F.cross_entropy(logits.reshape(-1, 256).float(), yb.reshape(-1))

    return loss_of


# The ResNet speed models: name → (ResNet-50 rather than -18, image size).
SPEED_RESNETS = {"resnet18": (False, 32), "resnet50": (True, 32), "resnet18-64": (False, 64), "resnet50-64": (True, 64)}
SPEED_MODELS = tuple(SPEED_RESNETS) + ("gpt6x256",)


def bench(model_name, technique, args, data):
    """Trains one model with one technique: args.warmup untimed steps, then
    args.timed steps each timed (the median is reported), then, for a loss
    model, the rest of args.steps; last, one more step under the profiler,
    untimed, for the peak."""
    torch.manual_seed(1)
    rng = random.Random(1)
    speed = model_name in SPEED_MODELS
    if speed:
        model, opt, batch, next_batch, loss_of, clip = speed_setup(model_name)
    else:
        model, opt, batch, next_batch, loss_of, clip = loss_setup(model_name, args, data, rng)
    model.run_blocks = "sqrt" if technique == "checkpoint √n" else None
    autocast = technique == "amp bf16"
    params = sum(p.numel() for p in model.parameters())

    def step():
        xb, yb = next_batch()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_of(xb, yb)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        loss = step()
    secs = []
    for _ in range(args.timed):
        began = time.perf_counter()
        loss = step()
        secs.append(time.perf_counter() - began)
    steps = args.warmup + args.timed
    if not speed:
        for _ in range(args.steps - steps):
            loss = step()
        steps = max(steps, args.steps)
    seconds = statistics.median(secs)
    opt.zero_grad(set_to_none=True)
    peak, note = peak_of_step(step, live_bytes(model, opt))
    return {
        "model": model_name, "technique": technique, "params": params, "batch": batch, "steps": steps,
        "warmup": args.warmup, "step_seconds": secs,
        "seconds_per_step": seconds, "samples_per_sec": batch / seconds,
        "speed": speed, "final_loss": 0.0 if speed else loss, "peak_bytes": peak, "peak_note": note,
    }


def bench_or_skip(model_name, technique, args, data):
    """bench's row, or {model, technique, reason} when oneDNN has no
    primitive for it: its bfloat16 convolutions need AVX-512, so under
    ONEDNN_MAX_CPU_ISA=AVX2 (--isa avx2) or on an AVX2-only CPU PyTorch
    cannot run an amp bf16 ResNet step at all."""
    try:
        return bench(model_name, technique, args, data)
    except RuntimeError as e:
        if "could not create a primitive" not in str(e):
            raise
        reason = f"oneDNN {onednn_isa() or '(ISA unknown)'} has no primitive for it: {e}"
        print(f"bench_torch.py: {model_name} {technique}: skipped, {reason}", file=sys.stderr)
        return {"model": model_name, "technique": technique, "reason": reason}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet,transformer", help="resnet, transformer (loss models) and " + ", ".join(SPEED_MODELS))
    ap.add_argument("--techniques", default="plain,amp bf16,checkpoint √n")
    ap.add_argument("--steps", type=int, default=8, help="training steps of a loss model's run (at least warmup + timed are run)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps before the timed ones (≥ 2)")
    ap.add_argument("--timed", type=int, default=5, help="timed steps, whose median is reported (≥ 5)")
    ap.add_argument("--resnet-batch", type=int, default=32)
    ap.add_argument("--gpt-batch", type=int, default=8)
    ap.add_argument("--mnist", default="", help="folder of the MNIST IDX files")
    ap.add_argument("--corpus", default="", help="text file or folder of *.go files")
    ap.add_argument("--threads", type=int, default=2, help="intra-op and inter-op threads (headroom's GOMAXPROCS)")
    ap.add_argument("--probe", action="store_true", help="print the environment (versions, BLAS, threads) and exit")
    args = ap.parse_args()
    if args.threads < 1:
        ap.error(f"--threads {args.threads}: want ≥ 1")
    torch.set_num_interop_threads(args.threads)  # before any inter-op work
    torch.set_num_threads(args.threads)
    if args.probe:
        json.dump(environment(args.threads), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if args.warmup < 2 or args.timed < 5:
        ap.error(f"--warmup {args.warmup} --timed {args.timed}: want ≥ 2 and ≥ 5")
    models = [m for m in args.models.split(",") if m]
    techniques = [t for t in args.techniques.split(",") if t]
    for m in models:
        if m not in ("resnet", "transformer") + SPEED_MODELS:
            ap.error(f"unknown model {m!r} (want resnet, transformer, {', '.join(SPEED_MODELS)})")
    for t in techniques:
        if t not in ("plain", "amp bf16", "checkpoint √n"):
            ap.error(f"unknown technique {t!r} (want plain, amp bf16 or checkpoint √n)")
    data = {}
    if "resnet" in models:
        if not args.mnist:
            ap.error("--mnist is needed for the resnet")
        data["mnist"] = load_mnist(args.mnist)
    if "transformer" in models:
        if not args.corpus:
            ap.error("--corpus is needed for the transformer")
        data["corpus"] = load_corpus(args.corpus)
        if len(data["corpus"]) < 1000:
            ap.error(f"corpus {args.corpus} has only {len(data['corpus'])} bytes")
    environment(args.threads)  # OpenBLAS's threads set before any step
    rows, skipped = [], []
    for m in models:
        for t in techniques:
            if m not in SPEED_MODELS or t != "checkpoint √n":
                row = bench_or_skip(m, t, args, data)
                (rows if "reason" not in row else skipped).append(row)
    out = environment(args.threads)
    out["rows"] = rows
    out["skipped"] = skipped
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
