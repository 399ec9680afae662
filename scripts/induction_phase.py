#!/usr/bin/python3
"""induction_phase: did a run form an induction head, and when? Reads ./train --log files.

Usage: scripts/induction_phase.py [--threshold X] [--json] LOG.jsonl...

A run must have been trained with --heads-every N (the log's "heads" lines carry,
per head, the in-text "repeat" score: the mean attention from a byte to the byte
after the previous occurrence of the same two bytes, what an induction head does).
The criterion (docs/corpus.md, "When has an induction head formed?"):

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
import argparse
import json
import statistics
import sys

THRESHOLD = 0.3


def read_log(path):
    """The log's records; a run resumed into the same log keeps the latest of each step."""
    heads, evals, final, settings = {}, {}, None, None
    with open(path) as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            if n == len(lines):  # a run still writing, or killed mid-line
                break
            raise SystemExit(f"induction_phase: {path}:{n}: not JSON ({e})")
        kind = rec.get("type")
        if kind == "heads":
            heads[rec["step"]] = rec["heads"]
        elif kind == "eval" and "val_loss" in rec:
            evals[rec["step"]] = rec["val_loss"]
        elif kind == "final":
            final = rec
        elif kind == "settings" and settings is None:
            settings = rec
    return settings, sorted(heads.items()), sorted(evals.items()), final


def best_series(heads):
    """[(step, best repeat score outside layer 0, 'L1H3')]"""
    out = []
    for step, hs in heads:
        later = [h for h in hs if h["layer"] >= 1]
        if not later:
            continue
        top = max(later, key=lambda h: h["repeat"])
        out.append((step, top["repeat"], f"L{top['layer']}H{top['head']}"))
    return out


def analyse(path, threshold):
    settings, heads, evals, final = read_log(path)
    series = best_series(heads)
    if not series:
        raise SystemExit(f"induction_phase: {path}: no 'heads' lines from a model with more than "
                         "one layer; train with --heads-every N and -L 2 or more")
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
        r["final_val_loss"] = final.get("val_loss")
        r["train_seconds"] = final.get("train_seconds")
        if "copy_loss_first" in final and final["copy_loss_first"] > 0:
            r["copy_loss_first"] = final["copy_loss_first"]
            r["copy_loss_repeat"] = final["copy_loss_repeat"]
            r["copy_loss_ratio"] = round(final["copy_loss_repeat"] / final["copy_loss_first"], 4)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--threshold", type=float, default=THRESHOLD,
                    help=f"repeat score that counts as an induction head (default {THRESHOLD})")
    ap.add_argument("--json", action="store_true", help="one JSON object per log")
    a = ap.parse_args()
    for path in a.logs:
        try:
            r = analyse(path, a.threshold)
        except OSError as e:
            sys.exit(f"induction_phase: {path}: {e.strerror}")
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
    main()
