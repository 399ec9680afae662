#!/usr/bin/python3
"""The PyTorch side of `make bench`: the same model as headcount (pre-LayerNorm
GPT, biases everywhere, tanh GELU, tied output weights, causal softmax attention),
the same batch, AdamW, on the CPU, timed over full training steps on random tokens.
Prints one CSV row per (configuration, variant, precision) to stdout.

Variants (--variants; `auto` runs every one the installed PyTorch has):
  eager    the model written out (QK^T, mask, softmax, AV) and torch.optim.AdamW's
           default per-tensor loop: what runs on PyTorch 1.13.
  sdpa     F.scaled_dot_product_attention(is_causal=True) and AdamW(fused=True)
           (foreach=True where fused is missing): PyTorch 2.x's fused kernels.
  compile  torch.compile of the sdpa model (forward and backward through
           TorchInductor), fused AdamW; the compilation runs in the warm-up steps,
           outside the timed region, and its time is the row's warmup_s.
A variant that fails (torch.compile needs a C++ compiler and Python headers) gives
a row with empty timings and the reason in `note`.

Precisions (--precision, a list; both by default):
  fp32     everything in float32.
  bf16     the forward pass (and so its backward) under
           torch.autocast("cpu", dtype=torch.bfloat16): PyTorch's mixed precision,
           which runs the linear layers, the logits and the attention's products in
           bfloat16 and keeps the weights, gradients, optimizer, LayerNorm, softmax
           and the loss in float32. Every variant runs in each precision.

Every run first checks that it is the same model: from the same init, on the same
first batch, its first loss must equal the float32 eager model's to a relative 1e-5
in fp32 (float32 sums in another order move it by about 1e-7) and to SAME_LOSS_TOL
["bf16"] in bf16, or the run stops with exit 1. --check does only that, for two
steps (so the optimizers are compared too), and times nothing.

Run with Debian's python3-torch as
`env -u OPENBLAS_CORETYPE GOMP_SPINCOUNT=10000 /usr/bin/python3 scripts/bench_torch.py`
or with a PyTorch 2.x venv's python (scripts/bench.sh runs both, with the same
OpenMP wait policy as ours). --threads sets torch.set_num_threads; one process
times one thread count, since torch.compile specialises its kernels on it."""
import argparse
import contextlib
import csv
import math
import re
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = [
    ("BABY", 4, 128, 64, 12, 1, 3, 30), ("BABY", 4, 128, 64, 12, 4, 3, 30),
    ("BABY", 4, 128, 64, 12, 8, 3, 30), ("BABY", 4, 128, 64, 12, 16, 3, 30),
    ("MID", 4, 256, 256, 16, 1, 2, 8), ("MID", 4, 256, 256, 16, 4, 2, 8),
    ("MID", 4, 256, 256, 16, 8, 2, 8), ("MID", 4, 256, 256, 16, 16, 2, 8),
    ("NANO", 6, 384, 256, 16, 6, 1, 5),
]
VARIANTS = ("eager", "sdpa", "compile")
PRECISIONS = ("fp32", "bf16")
# Warm-up steps of a compiled model: the first compiles forward and backward, and
# the next two absorb any recompilation (e.g. once the optimizer holds state).
COMPILE_WARM = 3
# Relative difference allowed between a run's first loss and the float32 eager
# model's. bf16: 2^-10, a quarter of bfloat16's unit roundoff 2^-8; --check measured
# 3e-5 to 1.7e-4 over two steps (eager, sdpa; compile at BABY H = 4) at BABY H = 1, 4
# and 16, MID H = 4 and NANO.
SAME_LOSS_TOL = {"fp32": 1e-5, "bf16": 2.0 ** -10}
HEADER = ["config", "L", "C", "T", "B", "H", "threads", "ms_median", "ms_min", "ms_max",
          "tokens_per_s", "torch", "variant", "precision", "blas", "isa", "warmup_s", "note"]


class Block(nn.Module):
    def __init__(self, C, H, T, sdpa):
        super().__init__()
        self.H, self.D, self.sdpa = H, C // H, sdpa
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.H, self.D).transpose(1, 2)
        k = k.view(B, T, self.H, self.D).transpose(1, 2)
        v = v.view(B, T, self.H, self.D).transpose(1, 2)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(self.D)
            att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(dim=-1)
            y = att @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    """sdpa switches the attention's arithmetic only: the parameters, their order
    and so their initialisation under one seed are the same either way."""

    def __init__(self, V, T, L, C, H, sdpa=False):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, H, T, sdpa) for _ in range(L))
        self.lnf = nn.LayerNorm(C)

    def set_sdpa(self, on):
        for b in self.blocks:
            b.sdpa = on

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def available(variant, precision="fp32"):
    """'' when this PyTorch has what the variant and precision need, else why not."""
    if precision == "bf16" and not hasattr(torch, "autocast"):
        return "no torch.autocast in torch " + torch.__version__
    if variant == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        return "no F.scaled_dot_product_attention in torch " + torch.__version__
    if variant == "compile" and not hasattr(torch, "compile"):
        return "no torch.compile in torch " + torch.__version__
    return ""


def adamw(params, variant):
    kw = dict(lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    if variant == "eager":
        return torch.optim.AdamW(params, **kw)
    try:
        return torch.optim.AdamW(params, fused=True, **kw)
    except (TypeError, RuntimeError):
        return torch.optim.AdamW(params, foreach=True, **kw)


def build(cfg, variant):
    """(model, module to call, optimizer), from seed 1: every variant starts from
    the same weights and draws the same batches."""
    name, L, C, T, B, H = cfg[:6]
    torch.manual_seed(1)
    model = GPT(65, T, L, C, H, sdpa=variant != "eager")
    step_fn = torch.compile(model) if variant == "compile" else model
    return model, step_fn, adamw(model.parameters(), variant)


def autocast(precision):
    """The context a forward pass runs in: PyTorch's CPU mixed precision for bf16."""
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def train_step(step_fn, opt, params, idx, tgt, precision):
    """One step; the backward runs outside autocast, as PyTorch's recipe has it
    (its operations follow the forward's precisions)."""
    with autocast(precision):
        loss = step_fn(idx, tgt)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    return loss.item()


def rel_diff(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def eager_loss(model, idx, tgt):
    """The float32 eager model's loss on this batch, with the model's weights as
    they are; the model's attention is switched back to what it was."""
    was = model.blocks[0].sdpa
    model.set_sdpa(False)
    with torch.no_grad():
        loss = model(idx, tgt).item()
    model.set_sdpa(was)
    return loss


def run(cfg, variant, precision):
    """Times one variant in one precision: (median, min, max ms per step, warm-up
    seconds)."""
    name, L, C, T, B, H, warm, steps = cfg
    model, step_fn, opt = build(cfg, variant)
    params = list(model.parameters())
    if variant == "compile":
        warm = max(warm, COMPILE_WARM)
    times, warm_s = [], 0.0
    for s in range(warm + steps):
        idx = torch.randint(0, 65, (B, T))
        tgt = torch.randint(0, 65, (B, T))
        first = s == 0 and (variant, precision) != ("eager", "fp32")
        ref = eager_loss(model, idx, tgt) if first else None
        t0 = time.perf_counter()
        loss = train_step(step_fn, opt, params, idx, tgt, precision)
        t1 = time.perf_counter()
        if ref is not None and not rel_diff(loss, ref) <= SAME_LOSS_TOL[precision]:
            raise SystemExit("bench_torch: %s:%d %s %s: first loss %.7f, float32 eager "
                             "model's %.7f: not the same model (tolerance %g)" % (
                                 name, H, variant, precision, loss, ref,
                                 SAME_LOSS_TOL[precision]))
        if s >= warm:
            times.append((t1 - t0) * 1e3)
        else:
            warm_s += t1 - t0
    return statistics.median(times), min(times), max(times), warm_s


def check(cfg, variants, precisions, steps=2):
    """Each (variant, precision)'s losses over the first steps against the float32
    eager model's; returns whether every one is within its precision's tolerance."""
    name, L, C, T, B, H = cfg[:6]
    runs = [("eager", "fp32")] + [(v, p) for p in precisions for v in variants
                                  if (v, p) != ("eager", "fp32")]
    losses = {}
    for v, p in runs:
        model, step_fn, opt = build(cfg, v)
        params = list(model.parameters())
        got = []
        for _ in range(steps):
            idx = torch.randint(0, 65, (B, T))
            tgt = torch.randint(0, 65, (B, T))
            got.append(train_step(step_fn, opt, params, idx, tgt, p))
        losses[(v, p)] = got
    ok = True
    for (v, p), got in losses.items():
        d = max(rel_diff(a, b) for a, b in zip(got, losses[("eager", "fp32")]))
        ok = ok and d <= SAME_LOSS_TOL[p]
        print("check %s:%d %-7s %s losses %s  largest relative difference %.2g "
              "(tolerance %g)" % (name, H, v, p, " ".join("%.6f" % x for x in got), d,
                                  SAME_LOSS_TOL[p]))
    return ok


def blas_name():
    """The BLAS this PyTorch calls, from torch.__config__.show()."""
    cfg = torch.__config__.show()
    found = re.search(r"BLAS_INFO=(\w+)", cfg)
    blas = found.group(1) if found else "unknown"
    mkl = re.search(r"Math Kernel Library Version ([\d.]+)", cfg)
    if blas == "mkl" and mkl:
        blas = "MKL " + mkl.group(1)
    elif blas == "open":
        blas = "OpenBLAS"
    dnn = re.search(r"MKL-DNN v([\d.]+)", cfg)
    return blas + (" + oneDNN " + dnn.group(1) if dnn else "")


def isa_name():
    """The instruction set PyTorch's CPU kernels were dispatched to."""
    get = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    if get is not None:
        return get()
    found = re.search(r"CPU capability usage: (\w+)", torch.__config__.show())
    return found.group(1) if found else "unknown"


def selected(spec):
    wanted = set(spec.split(","))
    return [c for c in CONFIGS if c[0] in wanted or "%s:%d" % (c[0], c[5]) in wanted]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--configs", default="BABY,MID,NANO",
                    help="NAME (every H) or NAME:H entries, comma-separated")
    ap.add_argument("--variants", default="auto",
                    help="comma-separated from %s, or auto: all this PyTorch has"
                    % ",".join(VARIANTS))
    ap.add_argument("--precision", default=",".join(PRECISIONS),
                    help="comma-separated from %s (default: all)" % ",".join(PRECISIONS))
    ap.add_argument("--no-header", action="store_true")
    ap.add_argument("--info", action="store_true",
                    help="print this PyTorch's version, BLAS, ISA and variants, and exit")
    ap.add_argument("--check", action="store_true",
                    help="compare every variant's first losses with the eager model's; "
                    "time nothing")
    a = ap.parse_args()
    if a.threads < 1:
        ap.error("--threads must be >= 1 (got %d)" % a.threads)
    if a.variants == "auto":
        variants = [v for v in VARIANTS if not available(v)]
    else:
        variants = a.variants.split(",")
        bad = [v for v in variants if v not in VARIANTS]
        if bad:
            ap.error("--variants: unknown %s (allowed: %s, auto)" % (",".join(bad),
                                                                    ",".join(VARIANTS)))
    precisions = a.precision.split(",")
    bad = [p for p in precisions if p not in PRECISIONS]
    if bad:
        ap.error("--precision: unknown %s (allowed: %s)" % (",".join(bad), ",".join(PRECISIONS)))
    if a.info:
        print("torch %s: BLAS %s, ISA %s, variants %s, precisions %s%s%s" % (
            torch.__version__, blas_name(), isa_name(), ",".join(variants) or "none",
            ",".join(p for p in PRECISIONS if not available("eager", p)),
            "".join("; %s: %s" % (v, available(v)) for v in VARIANTS if available(v)),
            "".join("; %s: %s" % (p, available("eager", p)) for p in PRECISIONS
                    if available("eager", p))))
        return 0
    configs = selected(a.configs)
    if not configs:
        ap.error("--configs: no configuration matches '%s'" % a.configs)
    torch.set_num_threads(a.threads)
    if a.check:
        usable = [v for v in variants if not available(v)]
        ready = [p for p in precisions if not available("eager", p)]
        ok = all([check(cfg, usable, ready) for cfg in configs])
        print("check: %s" % ("every loss within its tolerance" if ok else "FAILED"))
        return 0 if ok else 1
    out = csv.writer(sys.stdout, lineterminator="\n")
    if not a.no_header:
        out.writerow(HEADER)
    blas, isa = blas_name(), isa_name()
    for cfg in configs:
        name, L, C, T, B, H = cfg[:6]
        for p in precisions:
            for v in variants:
                note = available(v, p)
                if not note:
                    try:
                        med, lo, hi, warm_s = run(cfg, v, p)
                    except Exception as e:  # a compiler or backend failure, in the row
                        note = "%s: %s" % (type(e).__name__,
                                           str(e).strip().split("\n")[0][:200])
                        print("bench_torch: %s:%d %s %s failed: %s" % (name, H, v, p, note),
                              file=sys.stderr)
                if note:
                    out.writerow([name, L, C, T, B, H, a.threads, "", "", "", "",
                                  torch.__version__, v, p, blas, isa, "", note])
                else:
                    out.writerow([name, L, C, T, B, H, a.threads, "%.3f" % med, "%.3f" % lo,
                                  "%.3f" % hi, "%.1f" % (B * T / (med / 1e3)),
                                  torch.__version__, v, p, blas, isa, "%.1f" % warm_s, ""])
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
