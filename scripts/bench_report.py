#!/usr/bin/env python3
"""Summarises `make bench` CSVs (train.csv, torch.csv, matmul.csv, sample.csv in
the directory given) into one markdown table: ours vs PyTorch tokens/s with the
ratio and the issue's target, model GFLOP/s against the measured sgemm peak, the
2-thread speed-up, and sampling speed with and without the KV cache. Standard
library only. Writes summary.md next to the CSVs and prints it."""
import csv
import os
import sys

# Ours / PyTorch: issue 18's targets (BABY 2x, MID H = 1 and 4 1.5x, NANO 1.6x, and
# NANO at 70% of OpenBLAS's square sgemm GFLOP/s), issue 6's for MID H = 8 and 16.
TARGETS = {("BABY", h): 2.0 for h in (1, 4, 8, 16)}
TARGETS.update({("MID", 1): 1.5, ("MID", 4): 1.5, ("MID", 8): 2.0, ("MID", 16): 2.0,
                ("NANO", 6): 1.6})
NANO_PEAK_SHARE = 0.70


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def sgemm_peak(path):
    """Best 2-thread GFLOP/s on square shapes: (ours, OpenBLAS or None)."""
    ours = blas = None
    if not os.path.exists(path):
        return ours, blas
    header = None
    with open(path) as f:
        for row in csv.reader(f):
            if row and row[0] == "op":
                header = row
                continue
            if row and row[0] == "layer":
                header = None
                continue
            if header is None or len(row) != len(header):
                continue
            rec = dict(zip(header, row))
            for key, cur in (("ours_2t", "ours"), ("blas_2t", "blas")):
                try:
                    v = float(rec.get(key, ""))
                except ValueError:
                    continue
                if cur == "ours":
                    ours = v if ours is None else max(ours, v)
                else:
                    blas = v if blas is None else max(blas, v)
    return ours, blas


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    ours = read(os.path.join(d, "train.csv"))
    torch = {(r["config"], int(r["H"])): float(r["tokens_per_s"])
             for r in read(os.path.join(d, "torch.csv"))}
    peak_ours, peak_blas = sgemm_peak(os.path.join(d, "matmul.csv"))
    peak = peak_blas or peak_ours
    by = {}
    for r in ours:
        by[(r["config"], int(r["H"]), int(r["threads"]))] = r
    lines = ["| config | H | tok/s (2 thr) | GFLOP/s | % of sgemm peak | 2 thr / 1 thr |"
             " PyTorch tok/s | ratio | target | met |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (cfg, h, thr), r in sorted(by.items(), key=lambda kv: (["BABY", "MID", "NANO"].index(
            kv[0][0]) if kv[0][0] in ("BABY", "MID", "NANO") else 9, kv[0][1], kv[0][2])):
        if thr != 2:
            continue
        tps, gf = float(r["tokens_per_s"]), float(r["gflops"])
        one = by.get((cfg, h, 1))
        speed = f"{tps / float(one['tokens_per_s']):.2f}x" if one else "-"
        pct = f"{100 * gf / peak:.0f}%" if peak else "-"
        pt = torch.get((cfg, h))
        ratio = tps / pt if pt else None
        tgt = TARGETS.get((cfg, h))
        met = "-" if ratio is None or tgt is None else ("yes" if ratio >= tgt else "no")
        lines.append(f"| {cfg} | {h} | {tps:,.0f} | {gf:.1f} | {pct} | {speed} | "
                     f"{'-' if pt is None else f'{pt:,.0f}'} | "
                     f"{'-' if ratio is None else f'{ratio:.2f}x'} | "
                     f"{'-' if tgt is None else f'{tgt}x'} | {met} |")
    lines.append("")
    nano = by.get(("NANO", 6, 2))
    if nano and peak:
        share = float(nano["gflops"]) / peak
        lines.append(f"NANO at {100 * share:.0f}% of the sgemm peak (target "
                     f"{100 * NANO_PEAK_SHARE:.0f}%: {'met' if share >= NANO_PEAK_SHARE else 'missed'})")
    if peak_ours is not None:
        lines.append(f"sgemm peak, 2 threads, square matrices: ours {peak_ours:.0f} GFLOP/s"
                     + (f", OpenBLAS {peak_blas:.0f} GFLOP/s" if peak_blas else
                        " (OpenBLAS not installed)"))
    samp = {r["mode"]: r["tokens_per_s"] for r in read(os.path.join(d, "sample.csv"))}
    if samp:
        c, n = samp.get("cache", ""), samp.get("no-cache", "")
        extra = ""
        try:
            extra = f" ({float(c) / float(n):.1f}x)"
        except ValueError:
            pass
        lines.append(f"sampling: {c} tok/s with the KV cache, {n} tok/s without{extra}")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
