#!/usr/bin/env python3
"""Summarises `make bench` CSVs (train.csv, torch.csv, matmul.csv, sample.csv in
the directory given) into one markdown table: ours vs PyTorch tokens/s with the
ratio and the issue's target, model GFLOP/s against the measured sgemm peak, the
2-thread speed-up, and sampling speed with and without the KV cache. Standard
library only. Writes summary.md next to the CSVs and prints it.

With BENCH_ROUNDS = R > 1 the CSVs hold R rows per configuration, in the order the
rounds ran (ours, then PyTorch, R times): every figure is the median over the
rounds, and the ratio is the median of the R per-round ratios, shown with their
range."""
import csv
import os
import statistics
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
    torch = {}
    for r in read(os.path.join(d, "torch.csv")):
        torch.setdefault((r["config"], int(r["H"])), []).append(float(r["tokens_per_s"]))
    peak_ours, peak_blas = sgemm_peak(os.path.join(d, "matmul.csv"))
    peak = peak_blas or peak_ours
    by = {}
    for r in read(os.path.join(d, "train.csv")):
        by.setdefault((r["config"], int(r["H"]), int(r["threads"])), []).append(r)

    def med(rows, key):
        return statistics.median(float(r[key]) for r in rows)

    lines = ["| config | H | tok/s (2 thr) | GFLOP/s | % of sgemm peak | 2 thr / 1 thr |"
             " PyTorch tok/s | ratio | target | met |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    order = ["BABY", "MID", "NANO"]
    for (cfg, h, thr), rows in sorted(by.items(), key=lambda kv: (
            order.index(kv[0][0]) if kv[0][0] in order else 9, kv[0][1], kv[0][2])):
        if thr != 2:
            continue
        tps, gf = med(rows, "tokens_per_s"), med(rows, "gflops")
        one = by.get((cfg, h, 1))
        speed = f"{tps / med(one, 'tokens_per_s'):.2f}x" if one else "-"
        pct = f"{100 * gf / peak:.0f}%" if peak else "-"
        pts = torch.get((cfg, h), [])
        pt = statistics.median(pts) if pts else None
        ratio, spread = None, ""
        if len(pts) == len(rows) and pts:
            per_round = [float(r["tokens_per_s"]) / p for r, p in zip(rows, pts)]
            ratio = statistics.median(per_round)
            if len(per_round) > 1:
                spread = f" ({min(per_round):.2f}-{max(per_round):.2f})"
        elif pt:
            ratio = tps / pt
        tgt = TARGETS.get((cfg, h))
        met = "-" if ratio is None or tgt is None else ("yes" if ratio >= tgt else "no")
        lines.append(f"| {cfg} | {h} | {tps:,.0f} | {gf:.1f} | {pct} | {speed} | "
                     f"{'-' if pt is None else f'{pt:,.0f}'} | "
                     f"{'-' if ratio is None else f'{ratio:.2f}x{spread}'} | "
                     f"{'-' if tgt is None else f'{tgt}x'} | {met} |")
    lines.append("")
    nano = by.get(("NANO", 6, 2))
    if nano and peak:
        share = med(nano, "gflops") / peak
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
