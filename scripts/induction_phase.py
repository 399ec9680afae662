#!/usr/bin/python3
"""induction_phase: did a run form an induction head, and when? Reads ./train --log files.

Usage: scripts/induction_phase.py [--threshold X] [--json] LOG.jsonl...

A run must have been trained with --heads-every N (the log's "heads" lines carry,
per head, the in-text "repeat" score: the mean attention from a byte to the byte
after the previous occurrence of the same two bytes, what an induction head does).
The criterion (docs/induction.md, "When has an induction head formed?"):

  best(step)   = the highest repeat score of any head outside layer 0 at that step
                 (an induction head needs an earlier layer to shift keys by one byte)
  phase change = the first logged step from which best stays >= threshold for the
                 next two logged steps too (so one lucky batch does not count)
  formed       = a phase change happened and the median of the last three logged
                 best scores is >= threshold (the head is still there at the end)

It also prints the steepest drop of the val loss between two evaluations (the
loss side of the phase change) and, from the final line of a --corpus induction
run, the copy loss ratio: loss on repeated letters / loss on first occurrences.
Python standard library only; nothing is written.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli  # noqa: E402
import runlog  # noqa: E402
from ablate_stats import num  # noqa: E402

THRESHOLD = 0.3


class NotJudged(cli.Error):
    """A log this criterion cannot judge: no heads records from a layer >= 1."""


def read_log(path):
    """The log's settings (or None), [(step, heads)], [(step, val_loss)] of the eval
    records, and the final record (or None), read by runlog (its rule for a resumed
    run's repeated steps; a bad line is a cli.Error naming it)."""
    log = runlog.read(path)
    return (log.settings, [(r["step"], r["heads"]) for r in log.heads],
            [(r["step"], r["val_loss"]) for r in log.evals
             if r["type"] == "eval" and num(r["val_loss"]) == r["val_loss"]],
            log.final)


def best_series(heads):
    """[(step, best repeat score outside layer 0, 'L1H3')]"""
    out = []
    for step, hs in heads:
        later = [h for h in hs if h["layer"] >= 1 and num(h.get("repeat")) >= 0]
        if not later:
            continue
        top = max(later, key=lambda h: h["repeat"])
        out.append((step, top["repeat"], f"L{top['layer']}H{top['head']}"))
    return out


def analyse(path, threshold):
    settings, heads, evals, final = read_log(path)
    series = best_series(heads)
    if not series:
        raise NotJudged(f"{path}: no 'heads' lines with repeat scores from a model with more "
                        "than one layer; train with --heads-every N and -L 2 or more")
    phase = None
    for i, (step, score, _) in enumerate(series):
        following = [s for _, s, _ in series[i:i + 3]]
        if all(s >= threshold for s in following):
            phase = step
            break
    tail = [s for _, s, _ in series[-3:]]
    final_best = statistics.median(tail)
    formed = phase is not None and final_best >= threshold
    drop = None
    for (s0, v0), (s1, v1) in zip(evals, evals[1:]):
        if drop is None or v0 - v1 > drop[2]:
            drop = (s0, s1, v0 - v1, v0, v1)
    r = {
        "log": path,
        "seed": settings.get("seed") if settings else None,
        "heads": settings.get("heads") if settings else None,
        "formed": formed,
        "phase_step": phase,
        "final_best_repeat": round(final_best, 4),
        "final_best_head": series[-1][2],
        "max_best_repeat": round(max(s for _, s, _ in series), 4),
        "steps": series[-1][0],
    }
    if drop:
        r["steepest_val_drop"] = {"from_step": drop[0], "to_step": drop[1],
                                  "from": round(drop[3], 4), "to": round(drop[4], 4)}
    if final:
        if num(final.get("val_loss")) == final.get("val_loss"):
            r["final_val_loss"] = final["val_loss"]
        r["train_seconds"] = final.get("train_seconds")
        first, repeat = (num(final.get(k)) for k in ("copy_loss_first", "copy_loss_repeat"))
        if first > 0 and repeat >= 0:
            r["copy_loss_first"] = final["copy_loss_first"]
            r["copy_loss_repeat"] = final["copy_loss_repeat"]
            r["copy_loss_ratio"] = round(final["copy_loss_repeat"] / final["copy_loss_first"], 4)
    return r


def main(argv):
    ap = cli.Parser(prog="induction_phase.py", description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--threshold", type=float, default=THRESHOLD,
                    help=f"repeat score that counts as an induction head (default {THRESHOLD})")
    ap.add_argument("--json", action="store_true", help="one JSON object per log")
    a = ap.parse_args(argv)
    for path in a.logs:
        r = analyse(path, a.threshold)
        if a.json:
            print(json.dumps(r))
            continue
        drop = r.get("steepest_val_drop")
        ratio = r.get("copy_loss_ratio")
        print(f"{path}: formed {'yes' if r['formed'] else 'no'} | phase change at step "
              f"{r['phase_step'] if r['phase_step'] is not None else '-'} | final best repeat "
              f"{r['final_best_repeat']:.3f} ({r['final_best_head']}), max "
              f"{r['max_best_repeat']:.3f}"
              + (f" | steepest val drop {drop['from']:.3f} -> {drop['to']:.3f} at steps "
                 f"{drop['from_step']}-{drop['to_step']}" if drop else "")
              + (f" | final val {r['final_val_loss']:.4f}" if "final_val_loss" in r else "")
              + (f" | copy loss ratio {ratio:.3f}" if ratio is not None else ""))


if __name__ == "__main__":
    cli.run("induction_phase", main)
