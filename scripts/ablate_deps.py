#!/usr/bin/python3
"""ablate_deps: a treebank sweep's heads against gold dependencies, per L and H.

Usage: scripts/ablate_deps.py DIR [--min-pairs N]

DIR is a head-count sweep (scripts/ablate.sh) whose heads analysis read a CoNLL-U
file (--heads-file FILE.conllu), so each finished run's heads/summary.json holds
"dependencies" (docs/heads.md, "Gold dependencies"). Prints markdown: per model
shape (L, H, D) the val loss, then one row per relation and direction with at least
--min-pairs pairs (default 100; "all" always): pairs, the best head's accuracy,
the offset baseline's and a uniform head's, the best head's margin over the
baseline, in how many seeds it beats the baseline by more than its standard error,
in how many it serves the relation, and its ablation cost; each figure the median
(range) over the seeds. Python standard library only.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ablate_report as rep  # noqa: E402
import cli  # noqa: E402
from ablate_stats import spread  # noqa: E402

DIRS = ("dependent->head", "head->dependent")


def deps_of(run, path):
    d = run["summary"].get("dependencies")
    if not isinstance(d, dict) or not isinstance(d.get("relations"), dict):
        raise cli.Error("%s: no \"dependencies\" (run the sweep with --heads-file "
                        "FILE.conllu)" % path)
    return d


def rows_of(shape_runs, min_pairs):
    """(relation, direction) pairs to print: "all" first, then by pairs in the first run."""
    first = deps_of(shape_runs[0], shape_runs[0]["dir"])["relations"]
    keys = [(r, d) for r in first for d in DIRS
            if r == "all" or first[r][d]["pairs"] >= min_pairs]
    return sorted(keys, key=lambda k: (k[0] != "all", -first[k[0]][k[1]]["pairs"], k))


def main(argv):
    ap = cli.Parser(prog="ablate_deps.py", description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--min-pairs", type=int, default=100)
    a = ap.parse_args(argv)
    if a.min_pairs < 0:
        raise cli.Error("--min-pairs %d: expected 0 or more" % a.min_pairs, 2)
    try:
        sweep, runs = rep.load(a.dir)
    except (OSError, ValueError, KeyError) as e:
        raise cli.Error("%s: %s" % (a.dir, e))
    if not runs:
        raise cli.Error("%s: no finished run" % a.dir)
    shapes = {}
    for r in runs.values():
        shapes.setdefault((r.get("L", sweep["fingerprint"]["layers"]), r["H"], r["D"]),
                          []).append(r)
    for (L, H, D), rs in sorted(shapes.items()):
        rs.sort(key=lambda r: r["seed"])
        deps = [deps_of(r, r["dir"]) for r in rs]
        vals = [r["log"].final.get("val_loss") for r in rs if r["log"] and r["log"].final]
        print("\n**L = %d, H = %d, D = %d** (seeds %s; val loss %s; %s of %s sentences "
              "scored)\n" % (L, H, D, ",".join(str(r["seed"]) for r in rs), spread(vals, 3),
            deps[0]["scored_sentences"], deps[0]["sentences"]))
        print("| relation | direction | pairs | best head acc | offset acc | uniform acc | "
              "margin | beats offset | serves | cost |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for rel, d in rows_of(rs, a.min_pairs):
            sc = [x["relations"].get(rel, {}).get(d, {}) for x in deps]
            get = lambda k: [s.get(k) for s in sc if s.get("pairs")]  # noqa: E731
            margin = [s["accuracy"] - s["offset_accuracy"] for s in sc if s.get("pairs")]
            print("| %s | %s | %s | %s | %s | %s | %s | %d/%d | %d/%d | %s |" % (
                rel, d, spread(get("pairs"), 0), spread(get("accuracy"), 3),
                spread(get("offset_accuracy"), 3), spread(get("uniform_accuracy"), 3),
                spread(margin, 3), sum(bool(s.get("beats_offset")) for s in sc), len(sc),
                sum(bool(s.get("serves")) for s in sc), len(sc), spread(get("cost"), 4)))


if __name__ == "__main__":
    cli.run("ablate_deps", main)
