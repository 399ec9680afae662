#!/usr/bin/python3
"""induction_table: the per-H table of the induction ablation, from ./train --log files.

Usage: scripts/induction_table.py [--threshold X] LOG.jsonl...

Groups the runs by model shape (H, C, D from each log's settings line), applies
the criterion of scripts/induction_phase.py to each run, and prints one markdown
row per shape: seeds that formed an induction head, the phase-change step over
the seeds that formed one (median and range), the final copy loss ratio (loss on
repeated letters / loss on first occurrences, from a --corpus induction run's
final line; median and range over all seeds), and the final val loss. A run that
did not finish (no final line) is listed as unfinished and left out of the
medians. Python standard library only.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli  # noqa: E402
import induction_phase  # noqa: E402
from ablate_stats import spread  # noqa: E402


def main(argv):
    ap = cli.Parser(prog="induction_table.py", description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--threshold", type=float, default=induction_phase.THRESHOLD)
    a = ap.parse_args(argv)
    groups = {}
    for path in a.logs:
        settings = induction_phase.read_log(path)[0]
        key = tuple((settings or {}).get(k) for k in ("heads", "embd", "head_size"))
        if None in key:
            raise cli.Error(f"{path}: no settings line with heads, embd and head_size")
        groups.setdefault(key, []).append(induction_phase.analyse(path, a.threshold))
    print("| H | C | D | formed | phase-change step, median (range) | copy loss ratio, "
          "median (range) | final val loss, median (range) | seeds |")
    print("|---|---|---|---|---|---|---|---|")
    for (H, C, D), runs in sorted(groups.items()):
        done = [r for r in runs if "final_val_loss" in r]
        formed = [r for r in done if r["formed"]]
        phases = [r["phase_step"] for r in formed]
        ratios = [r["copy_loss_ratio"] for r in done if "copy_loss_ratio" in r]
        vals = [r["final_val_loss"] for r in done]
        seeds = ",".join(str(r["seed"]) for r in sorted(runs, key=lambda r: r["seed"]))
        unfinished = len(runs) - len(done)
        note = f" ({unfinished} unfinished)" if unfinished else ""
        print(f"| {H} | {C} | {D} | {len(formed)}/{len(done)}{note} | {spread(phases, 0)} "
              f"| {spread(ratios, 3)} | {spread(vals, 3)} "
              f"| {seeds} |")


if __name__ == "__main__":
    cli.run("induction_table", main)
