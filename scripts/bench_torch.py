#!/usr/bin/python3
"""The PyTorch side of `make bench`: the same model as headcount (pre-LayerNorm
GPT, biases everywhere, tanh GELU, tied output weights, causal softmax attention),
the same batch, AdamW, float32 on the CPU, timed over full training steps on
random tokens. Prints one CSV row per configuration to stdout.

Run with Debian's python3-torch as
`env -u OPENBLAS_CORETYPE GOMP_SPINCOUNT=10000 /usr/bin/python3 scripts/bench_torch.py`
(scripts/bench.sh does, with the same OpenMP wait policy as ours): on a 2-core Xeon
that bounded spin ran PyTorch's steps 10-20 % faster than OMP_WAIT_POLICY=PASSIVE,
which the first measurements used. --threads sets torch.set_num_threads."""
import argparse
import math
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


class Block(nn.Module):
    def __init__(self, C, H, T):
        super().__init__()
        self.H, self.D = H, C // H
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
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.D)
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, T, L, C, H):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, H, T) for _ in range(L))
        self.lnf = nn.LayerNorm(C)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def run(cfg):
    name, L, C, T, B, H, warm, steps = cfg
    torch.manual_seed(1)
    model = GPT(65, T, L, C, H)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), eps=1e-8,
                            weight_decay=0.1)
    times = []
    for s in range(warm + steps):
        idx = torch.randint(0, 65, (B, T))
        tgt = torch.randint(0, 65, (B, T))
        t0 = time.perf_counter()
        loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        t1 = time.perf_counter()
        if s >= warm:
            times.append((t1 - t0) * 1e3)
    return statistics.median(times), min(times), max(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--configs", default="BABY,MID,NANO",
                    help="NAME (every H) or NAME:H entries, comma-separated")
    ap.add_argument("--no-header", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    wanted = set(a.configs.split(","))
    if not a.no_header:
        print("config,L,C,T,B,H,threads,ms_median,ms_min,ms_max,tokens_per_s,torch")
    for cfg in CONFIGS:
        if cfg[0] not in wanted and f"{cfg[0]}:{cfg[5]}" not in wanted:
            continue
        med, lo, hi = run(cfg)
        name, L, C, T, B, H = cfg[:6]
        print(f"{name},{L},{C},{T},{B},{H},{a.threads},{med:.3f},{lo:.3f},{hi:.3f},"
              f"{B * T / (med / 1e3):.1f},{torch.__version__}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
