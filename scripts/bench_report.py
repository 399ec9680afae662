#!/usr/bin/env python3
"""Summarises `make bench` CSVs (train.csv, train_bf16.csv, torch.csv, matmul.csv,
sample.csv, cpu.csv in the directory given) into markdown tables: ours against each PyTorch
that ran in fp32 (tokens/s, the ratio and its target), model GFLOP/s against the
measured sgemm peak, the 2-thread speed-up, ours in bf16 against ours in fp32
(BF16_TARGETS), ours in bf16 against each PyTorch in bf16 (torch.autocast,
BF16_TARGETS2), every PyTorch 2.x variant's tokens/s in each precision, each
PyTorch's BLAS and instruction set, and sampling speed with and without the KV
cache. Standard library only. Writes summary.md next to the CSVs and prints it.

torch.csv's `precision` column says fp32 or bf16; rows without it are fp32.

One group of columns per PyTorch version in torch.csv. PyTorch 1.x (Debian's 1.13)
has one variant, eager, and is held to TARGETS; for a PyTorch 2.x the group names
the best variant of each (configuration, H, threads), the one with the highest
median tokens/s, and the ratio is against it and TARGETS2.

With BENCH_ROUNDS = R > 1 the CSVs hold R rows per configuration and variant, in
the order the rounds ran: every figure is the median over the rounds, and a ratio
is the median of the R per-round ratios, shown with their range."""
import csv
import os
import statistics
import sys

# Ours / PyTorch 1.13 (2 threads): issue 18's targets (BABY 2x, MID H = 1 and 4 1.5x,
# NANO 1.6x, and NANO at 70% of OpenBLAS's square sgemm GFLOP/s), issue 6's for MID
# H = 8 and 16.
TARGETS = {("BABY", h): 2.0 for h in (1, 4, 8, 16)}
TARGETS.update({("MID", 1): 1.5, ("MID", 4): 1.5, ("MID", 8): 2.0, ("MID", 16): 2.0,
                ("NANO", 6): 1.6})
# Ours / the best PyTorch 2.x variant (2 threads), issue 28: 1.5x everywhere, 2x on
# BABY and on MID at H >= 8.
TARGETS2 = {("BABY", h): 2.0 for h in (1, 4, 8, 16)}
TARGETS2.update({("MID", 1): 1.5, ("MID", 4): 1.5, ("MID", 8): 2.0, ("MID", 16): 2.0,
                 ("NANO", 6): 1.5})
NANO_PEAK_SHARE = 0.70
# Ours in bf16 / ours in fp32 (2 threads), the target: 1.6x on MID and NANO.
BF16_TARGETS = {("MID", h): 1.6 for h in (1, 4, 8, 16)}
BF16_TARGETS[("NANO", 6)] = 1.6
# Ours in bf16 / the best PyTorch 2.x variant in bf16 (2 threads), the targets: 1.5x
# everywhere, 2x on BABY.
BF16_TARGETS2 = {("BABY", h): 2.0 for h in (1, 4, 8, 16)}
BF16_TARGETS2.update({("MID", h): 1.5 for h in (1, 4, 8, 16)})
BF16_TARGETS2[("NANO", 6)] = 1.5


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


def major(version):
    """The major number of a torch.__version__ (2 where it cannot be read)."""
    try:
        return int(version.split(".")[0])
    except ValueError:
        return 2


def short(version):
    """'2.13' from '2.13.0+cpu'."""
    return ".".join(version.split("+")[0].split(".")[:2])


def version_key(version):
    return tuple(int(x) if x.isdigit() else 0 for x in version.split("+")[0].split("."))


def precision_of(row):
    """A torch.csv row's precision: fp32 where the column is missing or empty."""
    return row.get("precision") or "fp32"


def torch_runs(rows):
    """{(config, H, threads, torch version, precision): {variant: [tokens/s per
    round]}} and the rows whose variant failed or was unavailable."""
    runs, failed = {}, []
    for r in rows:
        key = (r["config"], int(r["H"]), int(r.get("threads") or 2), r.get("torch", ""),
               precision_of(r))
        if not r.get("tokens_per_s"):
            failed.append(r)
            continue
        runs.setdefault(key, {}).setdefault(r.get("variant") or "eager", []).append(
            float(r["tokens_per_s"]))
    return runs, failed


def best_variant(variants):
    """(name, tokens/s per round) of the variant with the highest median."""
    if not variants:
        return None, []
    name = max(variants, key=lambda v: statistics.median(variants[v]))
    return name, variants[name]


def ratio_of(ours, theirs):
    """Ours / theirs: the median of per-round ratios when the rounds pair up, else
    the ratio of medians; with the range of per-round ratios when R > 1."""
    if not ours or not theirs:
        return None, ""
    if len(ours) == len(theirs):
        per_round = [a / b for a, b in zip(ours, theirs)]
        spread = f" ({min(per_round):.2f}-{max(per_round):.2f})" if len(per_round) > 1 else ""
        return statistics.median(per_round), spread
    return statistics.median(ours) / statistics.median(theirs), ""


def fmt_tps(values):
    return f"{statistics.median(values):,.0f}" if values else "-"


def vs(ours, theirs, target):
    """'ratio | target | met' cells."""
    ratio, spread = ratio_of(ours, theirs)
    met = "-" if ratio is None or target is None else ("yes" if ratio >= target else "no")
    return (f"{'-' if ratio is None else f'{ratio:.2f}x{spread}'} | "
            f"{'-' if target is None else f'{target}x'} | {met}")


def cpu_line(path):
    """'CPU: NAME, N cores; avx512_bf16 yes|no, amx_bf16 yes|no' from cpu.csv, or ''."""
    cpu = {r["name"]: r["value"] for r in read(path)}
    if not cpu:
        return ""
    return (f"CPU: {cpu.get('cpu', '?')}, {cpu.get('cores', '?')} cores; avx512_bf16 "
            f"{cpu.get('avx512_bf16', '?')}, amx_bf16 {cpu.get('amx_bf16', '?')} (ours: "
            "VDPBF16PS in a build for avx512_bf16, as -march=native on such a CPU, else an "
            "exact emulation; AMX never)")


def bf16_vs_torch(bf16, runs, versions, order_key):
    """Lines of one table per PyTorch with bf16 rows: ours in bf16 against its best
    bf16 variant (BF16_TARGETS2 at 2 threads for PyTorch 2.x), and that variant's
    gain over its best fp32 variant, so that both sides' bf16 / fp32 sit in one run."""
    lines = []
    for ver in versions:
        keys = sorted({k[:3] for k in runs if k[3:] == (ver, "bf16")},
                      key=lambda k: order_key(*k))
        if not keys:
            continue
        lines += [f"Ours in bf16 against PyTorch {ver} in bf16 (torch.autocast), the same "
                  "rounds:", "",
                  f"| config | H | threads | ours bf16 tok/s | best PyTorch {short(ver)} bf16 "
                  f"variant | its tok/s | ours / it | target | met | its bf16 / its fp32 |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for cfg, h, thr in keys:
            ours = [float(r["tokens_per_s"]) for r in bf16.get((cfg, h, thr), [])]
            name, theirs = best_variant(runs[(cfg, h, thr, ver, "bf16")])
            _, theirs32 = best_variant(runs.get((cfg, h, thr, ver, "fp32"), {}))
            target = BF16_TARGETS2.get((cfg, h)) if thr == 2 and major(ver) >= 2 else None
            gain, spread = ratio_of(theirs, theirs32)
            lines.append(f"| {cfg} | {h} | {thr} | {fmt_tps(ours)} | {name} | "
                         f"{fmt_tps(theirs)} | {vs(ours, theirs, target)} | "
                         f"{'-' if gain is None else f'{gain:.2f}x{spread}'} |")
        lines.append("")
    return lines


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    torch_rows = read(os.path.join(d, "torch.csv"))
    runs, failed = torch_runs(torch_rows)
    versions = sorted({k[3] for k in runs}, key=version_key)
    peak_ours, peak_blas = sgemm_peak(os.path.join(d, "matmul.csv"))
    peak = peak_blas or peak_ours
    by = {}
    for r in read(os.path.join(d, "train.csv")):
        by.setdefault((r["config"], int(r["H"]), int(r["threads"])), []).append(r)

    def med(rows, key):
        return statistics.median(float(r[key]) for r in rows)

    def order_key(cfg, h, thr):
        return (order.index(cfg) if cfg in order else 9, h, thr)

    def torch_heads(ver, targets):
        """Column heads and rule for one PyTorch: 1.x has one variant, eager; for
        2.x the best variant is named."""
        name = "" if major(ver) < 2 else f" best PyTorch {ver} variant |"
        tps = " its tok/s |" if name else f" PyTorch {ver} tok/s |"
        extra = " target | met |" if targets else ""
        cols = (2 if name else 1) + 1 + (2 if targets else 0)
        return name + tps + f" ours / {short(ver)} |" + extra, "---|" * cols

    def torch_cells(key, ver, ours, targets):
        name, theirs = best_variant(runs.get(key + ("fp32",), {}))
        cells = f" {name or '-'} |" if major(ver) >= 2 else ""
        cells += f" {fmt_tps(theirs)} |"
        if targets is None:
            ratio, spread = ratio_of(ours, theirs)
            return cells + f" {'-' if ratio is None else f'{ratio:.2f}x{spread}'} |"
        return cells + f" {vs(ours, theirs, targets.get(key[:2]))} |"

    order = ["BABY", "MID", "NANO"]
    keys = sorted(by, key=lambda k: order_key(*k))
    head = "| config | H | tok/s (2 thr) | GFLOP/s | % of sgemm peak | 2 thr / 1 thr |"
    rule = "|---|---|---|---|---|---|"
    for ver in versions:
        h_, r_ = torch_heads(ver, True)
        head, rule = head + h_, rule + r_
    lines = [head, rule]
    for cfg, h, thr in keys:
        if thr != 2:
            continue
        rows = by[(cfg, h, thr)]
        ours = [float(r["tokens_per_s"]) for r in rows]
        tps, gf = med(rows, "tokens_per_s"), med(rows, "gflops")
        one = by.get((cfg, h, 1))
        speed = f"{tps / med(one, 'tokens_per_s'):.2f}x" if one else "-"
        pct = f"{100 * gf / peak:.0f}%" if peak else "-"
        line = f"| {cfg} | {h} | {tps:,.0f} | {gf:.1f} | {pct} | {speed} |"
        for ver in versions:
            line += torch_cells((cfg, h, thr, ver), ver, ours,
                                TARGETS if major(ver) < 2 else TARGETS2)
        lines.append(line)
    lines.append("")
    if versions and any(k[2] == 1 for k in keys):
        head, rule = "| config | H | tok/s (1 thr) |", "|---|---|---|"
        for ver in versions:
            h_, r_ = torch_heads(ver, False)
            head, rule = head + h_, rule + r_
        lines += ["One thread (no targets):", "", head, rule]
        for cfg, h, thr in keys:
            if thr != 1:
                continue
            ours = [float(r["tokens_per_s"]) for r in by[(cfg, h, thr)]]
            line = f"| {cfg} | {h} | {fmt_tps(ours)} |"
            for ver in versions:
                line += torch_cells((cfg, h, thr, ver), ver, ours, None)
            lines.append(line)
        lines.append("")
    bf16 = {}
    for r in read(os.path.join(d, "train_bf16.csv")):
        bf16.setdefault((r["config"], int(r["H"]), int(r["threads"])), []).append(r)
    if bf16:
        cpu = cpu_line(os.path.join(d, "cpu.csv"))
        lines += ["Ours in bf16 (--precision bf16) against ours in fp32, the same rounds:", ""]
        lines += [cpu, ""] if cpu else []
        lines += ["| config | H | threads | fp32 tok/s | bf16 tok/s | bf16 / fp32 | target | met |",
                  "|---|---|---|---|---|---|---|---|"]
        for cfg, h, thr in sorted(bf16, key=lambda k: order_key(*k)):
            b = [float(r["tokens_per_s"]) for r in bf16[(cfg, h, thr)]]
            f = [float(r["tokens_per_s"]) for r in by.get((cfg, h, thr), [])]
            target = BF16_TARGETS.get((cfg, h)) if thr == 2 else None
            lines.append(f"| {cfg} | {h} | {thr} | {fmt_tps(f)} | {fmt_tps(b)} | "
                         f"{vs(b, f, target)} |")
        lines.append("")
    lines += bf16_vs_torch(bf16, runs, versions, order_key)
    names = ["eager", "sdpa", "compile"]
    for ver in versions:
        if major(ver) < 2:
            continue
        for prec, how in (("fp32", "in fp32"), ("bf16", "in bf16 (torch.autocast)")):
            rows = sorted(((k, v) for k, v in runs.items() if k[3:] == (ver, prec)),
                          key=lambda kv: order_key(*kv[0][:3]))
            if not rows:
                continue
            lines += [f"PyTorch {ver} variants {how}, median tok/s (eager: the model written "
                      "out, per-tensor AdamW; sdpa: scaled_dot_product_attention, fused "
                      "AdamW; compile: torch.compile of sdpa):", "",
                      "| config | H | threads | " + " | ".join(names) + " |",
                      "|---|---|---|" + "---|" * len(names)]
            for (cfg, h, thr, _, _), variants in rows:
                lines.append(f"| {cfg} | {h} | {thr} | "
                             + " | ".join(fmt_tps(variants.get(n, [])) for n in names) + " |")
            lines.append("")
    builds = {}
    for r in torch_rows:
        builds.setdefault(r.get("torch", ""), (r.get("blas", "?"), r.get("isa", "?")))
    for version, (blas, isa) in sorted(builds.items()):
        lines.append(f"PyTorch {version}: BLAS {blas or '?'}, ISA {isa or '?'}")
    warm = [float(r["warmup_s"]) for r in torch_rows
            if r.get("variant") == "compile" and r.get("warmup_s")]
    if warm:
        lines.append(f"torch.compile warm-up (untimed, compilation included): "
                     f"{min(warm):.0f}-{max(warm):.0f} s per run")
    said = set()
    for r in failed:
        line = (f"PyTorch {r.get('torch', '')} {r.get('variant', '')} "
                f"{precision_of(r)} at {r['config']}:"
                f"{r['H']}, {r.get('threads', '')} thr: not timed ({r.get('note', '')})")
        if line not in said:
            said.add(line)
            lines.append(line)
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
