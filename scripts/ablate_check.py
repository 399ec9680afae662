#!/usr/bin/env python3
"""ablate_check: verifies that a head-count sweep's outputs exist and are well formed.

What it checks, for DIR written by ablate_sweep.py / ablate_report.py:
  - sweep.json parses; every (arm, H, seed) it asks for has a finished run;
  - ablation.csv has the documented header and one row per (arm, H, seed), every
    numeric cell is a finite number (heads cells may be empty only when the heads
    analysis did not run), and ppl/bpc agree with the val loss;
  - ablation.md has one table per arm with one row per H;
  - every plot is a non-empty SVG that parses as XML and holds the marks expected;
  - index.html parses as XML and every local link in it points to a file;
  - a run whose heads analysis ran has a summary.json with the documented keys.
It never changes a file. Returns a list of problems (empty: all good).

    python3 scripts/ablate_check.py DIR      (exit 1 if any problem)
"""
import csv
import json
import math
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ablate_report as rep  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
SUMMARY_KEYS = {"layers", "heads", "mean_entropy", "mean_distance", "type_counts",
                "effective_heads", "removable_heads_1pct", "max_importance", "base_loss"}


def finite(s):
    try:
        return math.isfinite(float(s))
    except (TypeError, ValueError):
        return False


def expected_rows(sweep):
    fp, out = sweep["fingerprint"], set()
    for arm in sweep["arms"]:
        for H in sweep["heads"]:
            for seed in sweep["seeds"]:
                D = fp["embd"] // H if arm == "width" else fp["fixed_head_size"]
                out.add((arm, H, D, seed))
    return out


def check_csv(path, sweep, problems):
    if not os.path.exists(path):
        return problems.append("%s: missing" % path)
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != rep.COLUMNS:
        return problems.append("%s: header is not the documented one (%s)" %
                               (path, ",".join(rows[0]) if rows else "empty file"))
    want, seen = expected_rows(sweep), set()
    numeric = [c for c in rep.COLUMNS if c not in rep.TEXT_COLS]
    for i, raw in enumerate(rows[1:], start=2):
        if len(raw) != len(rep.COLUMNS):
            problems.append("%s line %d: %d cells, expected %d" % (path, i, len(raw),
                                                                   len(rep.COLUMNS)))
            continue
        r = dict(zip(rep.COLUMNS, raw))
        heads_ok = r["heads_status"] == "ok"
        for c in numeric:
            if c in rep.HEAD_COLS and not heads_ok and r[c] == "":
                continue
            if not finite(r[c]):
                problems.append("%s line %d: %s = '%s' is not a finite number" % (path, i, c, r[c]))
        if not r["heads_status"]:
            problems.append("%s line %d: empty heads_status" % (path, i))
        if finite(r["val_loss"]) and finite(r["ppl"]) and finite(r["bpc"]):
            v = float(r["val_loss"])
            if not (0 < v < 20 and abs(float(r["ppl"]) / math.exp(v) - 1) < 1e-3 and
                    abs(float(r["bpc"]) - v / math.log(2)) < 1e-3):
                problems.append("%s line %d: val loss %s, ppl %s and bpc %s disagree" %
                                (path, i, r["val_loss"], r["ppl"], r["bpc"]))
        try:
            key = (r["arm"], int(r["H"]), int(r["D"]), int(r["seed"]))
        except ValueError:
            continue
        if key in seen:
            problems.append("%s line %d: %s listed twice" % (path, i, key))
        seen.add(key)
    for key in sorted(want - seen):
        problems.append("%s: no row for arm %s, H=%d, D=%d, seed %d (run unfinished?)" %
                        ((path,) + key))
    for key in sorted(seen - want):
        problems.append("%s: unexpected row for arm %s, H=%d, D=%d, seed %d" % ((path,) + key))


def check_md(path, sweep, problems):
    if not os.path.exists(path):
        return problems.append("%s: missing" % path)
    text = open(path, encoding="utf-8").read()
    parts = re.split(r"^## Arm: ", text, flags=re.M)[1:]
    if len(parts) != len(sweep["arms"]):
        problems.append("%s: %d arm sections, expected %d" % (path, len(parts),
                                                               len(sweep["arms"])))
    for part in parts:
        lines = [ln for ln in part.splitlines() if ln.startswith("|")]
        if not lines or not lines[0].startswith("| H | D |"):
            problems.append("%s: section '%s' has no table starting '| H | D |'" %
                            (path, part.splitlines()[0]))
            continue
        body = []
        for ln in lines[2:]:
            if not re.match(r"\| \d+ \| \d+ \|", ln):
                break
            body.append(ln)
        if len(body) != len(sweep["heads"]):
            problems.append("%s: section '%s': %d table rows, expected %d (one per H)" %
                            (path, part.splitlines()[0], len(body), len(sweep["heads"])))
        for ln in body:
            if not re.search(r"\| \d+\.\d{4}( ± \d+\.\d{4})? \|", ln):
                problems.append("%s: row without a numeric val loss: %s" % (path, ln))


def check_svg(path, problems, min_marks=1, marks=("polyline", "circle", "rect")):
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return problems.append("%s: missing or empty" % path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return problems.append("%s: not well-formed XML: %s" % (path, e))
    if root.tag != SVG + "svg" or not root.get("width") or not root.get("viewBox"):
        return problems.append("%s: root is not an <svg> with width and viewBox" % path)
    texts = [t.text for t in root.iter(SVG + "text") if t.text]
    if len(texts) < 3:
        problems.append("%s: only %d text labels (axes, title, legend expected)" %
                        (path, len(texts)))
    n = sum(1 for tag in marks for _ in root.iter(SVG + tag))
    if n < min_marks:
        problems.append("%s: %d marks (%s), expected at least %d" % (path, n, "/".join(marks),
                                                                     min_marks))


def check_html(path, problems):
    if not os.path.exists(path):
        return problems.append("%s: missing" % path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return problems.append("%s: not well-formed: %s" % (path, e))
    base = os.path.dirname(path)
    for el in root.iter():
        link = el.get("href") or el.get("src")
        if link and not re.match(r"[a-z]+:", link) and not link.startswith("#"):
            if not os.path.exists(os.path.join(base, link)):
                problems.append("%s: broken link %s" % (path, link))


def check_runs(outdir, runs, problems):
    for name, run in runs.items():
        d = run["done"]
        for key in ("H", "D", "seed", "val_loss", "ppl", "bpc", "params", "heads_status"):
            if key not in d:
                problems.append("%s/done.json: no '%s'" % (run["dir"], key))
        if d.get("heads_status") == "ok":
            s = run["summary"]
            if s is None:
                problems.append("%s: heads ok but heads/summary.json missing" % run["dir"])
            elif not SUMMARY_KEYS <= set(s):
                problems.append("%s/heads/summary.json: missing keys %s" %
                                (run["dir"], ", ".join(sorted(SUMMARY_KEYS - set(s)))))
        if not run["log"]["final"]:
            problems.append("%s/run.jsonl: no final record" % run["dir"])


def check(outdir):
    problems = []
    path = os.path.join(outdir, "sweep.json")
    if not os.path.exists(path):
        return ["%s: missing (is %s a sweep directory?)" % (path, outdir)]
    try:
        sweep, runs = rep.load(outdir)
    except (ValueError, KeyError, OSError) as e:
        return ["%s: cannot be loaded: %s: %s" % (outdir, type(e).__name__, e)]
    check_runs(outdir, runs, problems)
    check_csv(os.path.join(outdir, "ablation.csv"), sweep, problems)
    check_md(os.path.join(outdir, "ablation.md"), sweep, problems)
    n_rows = len(expected_rows(sweep))
    plots = os.path.join(outdir, "plots")
    check_svg(os.path.join(plots, "val_loss.svg"), problems, min_marks=n_rows,
              marks=("circle",))
    for arm in sweep["arms"]:
        n_arm = len(sweep["heads"]) * len(sweep["seeds"])
        check_svg(os.path.join(plots, "curves_%s.svg" % arm), problems, min_marks=n_arm,
                  marks=("polyline",))
    check_svg(os.path.join(plots, "head_types.svg"), problems)
    check_svg(os.path.join(plots, "importance.svg"), problems)
    if any(r["done"].get("heads_status") == "ok" for r in runs.values()):
        check_svg(os.path.join(plots, "importance.svg"), problems, min_marks=1,
                  marks=("circle",))
    check_html(os.path.join(outdir, "index.html"), problems)
    return problems


def main(argv):
    if len(argv) != 2:
        print("usage: python3 scripts/ablate_check.py DIR", file=sys.stderr)
        return 2
    problems = check(argv[1])
    for p in problems:
        print("ablate_check: %s" % p, file=sys.stderr)
    print("ablate_check: %s: %s" % (argv[1], "%d problem(s)" % len(problems) if problems
                                    else "ok"), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
