#!/usr/bin/python3
"""An independent reader of headcount checkpoints (format v1, docs/checkpoint.md),
in PyTorch: loads the parameters with nothing but the documented layout, rebuilds
the model from the description in the core issue, and scores a text file the way
`./infer --eval` does (consecutive windows of T inputs, the last one shorter,
mean over all predicted bytes). Agreement with ./infer to 1e-4 shows the format
and the model are what the documentation says.

usage: /usr/bin/python3 scripts/torch_eval.py CKPT FILE   (Debian's python3-torch)"""
import math
import struct
import sys

import torch
import torch.nn.functional as F


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    hdr = struct.unpack_from("<256i", data, 0)
    if hdr[0] != 20261122 or hdr[1] != 1:
        sys.exit(f"{path}: not a headcount v1 checkpoint")
    V, T, L, H, C, D = hdr[2], hdr[3], hdr[4], hdr[5], hdr[6], hdr[9]
    vocab = data[1024:1024 + V]
    off = 1024 + 256
    A = H * D

    def take(*shape):
        nonlocal off
        n = math.prod(shape)
        t = torch.frombuffer(bytearray(data[off:off + 4 * n]), dtype=torch.float32)
        off += 4 * n
        return t.reshape(shape)

    p = {"wte": take(V, C), "wpe": take(T, C), "layers": []}
    for _ in range(L):
        p["layers"].append({
            "ln1.w": take(C), "ln1.b": take(C), "qkv.w": take(3 * A, C), "qkv.b": take(3 * A),
            "proj.w": take(C, A), "proj.b": take(C), "ln2.w": take(C), "ln2.b": take(C),
            "fc.w": take(4 * C, C), "fc.b": take(4 * C), "fcproj.w": take(C, 4 * C),
            "fcproj.b": take(C)})
    p["lnf.w"], p["lnf.b"] = take(C), take(C)
    return (V, T, L, H, C, D), vocab, p


def forward(cfg, p, idx):
    V, T, L, H, C, D = cfg
    A = H * D
    B, t = idx.shape
    x = p["wte"][idx] + p["wpe"][:t]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    for lw in p["layers"]:
        h = F.layer_norm(x, (C,), lw["ln1.w"], lw["ln1.b"], 1e-5)
        qkv = h @ lw["qkv.w"].t() + lw["qkv.b"]
        q, k, v = (qkv[..., i * A:(i + 1) * A].reshape(B, t, H, D).transpose(1, 2)
                   for i in range(3))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, t, A)
        x = x + y @ lw["proj.w"].t() + lw["proj.b"]
        h = F.layer_norm(x, (C,), lw["ln2.w"], lw["ln2.b"], 1e-5)
        h = F.gelu(h @ lw["fc.w"].t() + lw["fc.b"], approximate="tanh")
        x = x + h @ lw["fcproj.w"].t() + lw["fcproj.b"]
    x = F.layer_norm(x, (C,), p["lnf.w"], p["lnf.b"], 1e-5)
    return x @ p["wte"].t()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cfg, vocab, p = load(sys.argv[1])
    T = cfg[1]
    with open(sys.argv[2], "rb") as f:
        text = f.read()
    lut = {b: i for i, b in enumerate(vocab)}
    ids = torch.tensor([lut[b] for b in text], dtype=torch.long)
    total, count = 0.0, 0
    with torch.no_grad():
        for s in range(0, len(ids) - 1, T):
            inp = ids[s:s + T][: len(ids) - 1 - s]
            tgt = ids[s + 1:s + 1 + len(inp)]
            logits = forward(cfg, p, inp[None])
            total += F.cross_entropy(logits[0].double(), tgt, reduction="sum").item()
            count += len(tgt)
    loss = total / count
    print(f"eval loss {loss:.6f} ppl {math.exp(loss):.4f} bpc {loss / math.log(2):.4f} "
          f"tokens {count}")


if __name__ == "__main__":
    main()
