"""ablate_route: the routing sweep's part of the ablation report (ablate.sh --head-routing).

A routed run is a plain run (same arm, L, H, D and seed) trained again with train's
--head-routing K (a learned router per layer gives each token K of the layer's H
heads, docs/heads.md "Routing to heads"), for every H of the sweep above K. A token
of it uses K heads, so it is compared with two plain runs of the same arm, depth and
seed:
- plain H = K: as many heads per token, each a whole head of the arm's size (the
  width arm keeps C, so H = 16, K = 4 meets the plain H = 4 run with D = C/4; the
  head-size arm keeps D, so the plain H = K run has the routed run's K·D of
  attention per token);
- plain H = H: the run it is a twin of, every head on every token.
Per arm, H and K this module reports for the three, mean ± s.d. over the seeds of
the routed runs that finished: val loss and bits per byte (train's final line), the
minimal-pair accuracy of every relation with minimal pairs (summary.json's
"relations", as the relations tables read it) and the compromise measure's mean
overlap (summary.json's "compromise", where ./infer wrote one). Its outputs: the
section SECTION of ablation.md, its tables on index.html (html_part()) and
routing.csv (one row per arm and routed run). Loading the runs is ablate_report.py's;
standard library only.
"""
import csv
import html
import os

import ablate_legend
import ablate_relations
import cli
from ablate_stats import csv_text, mean_sd, num, pm, twin_groups

SECTION = "## Routing sweep: K of the H heads per token"
TABLE = "Routed and plain runs per arm, H and K:"
CSV = "routing.csv"
# The three models of a comparison, in the table's order, and each one's prefix in
# routing.csv's columns.
MODELS = {"routed": "", "plain_k": "plain_k_", "plain_h": "plain_h_"}


def model(row):
    """What the report keeps of one run's row: its name, D, losses, compromise overlap
    and the minimal-pair accuracy of each relation with minimal pairs."""
    return {"run": row["run"], "D": row["D"], "bpb": row["bpb"], "val_loss": row["val_loss"],
            "overlap": row.get("compromise_overlap"),
            "accuracy": {k: num(v.get("accuracy")) for k, v in row["relations"].items()
                         if "accuracy" in v}}


def names_of(cmp):
    """The relations with minimal pairs in some model of the comparisons, in
    summary.json's order."""
    return list(dict.fromkeys(k for c in cmp for m in MODELS if c[m] for k in c[m]["accuracy"]))


def compare_all(routed, plain):
    """Every routed row with the plain rows of its arm and seed it is compared with:
    {arm, run, L, H, D, K, seed, routed, plain_k (H = K), plain_h (the same H)}, each
    model() or None where that plain run has not finished or is not in the sweep; by
    arm, H, K, seed."""
    by_name = {(r["arm"], r["run"]): r for r in plain}
    by_h = {(r["arm"], r["H"], r["seed"]): r for r in plain}
    out = []
    for g in routed:
        pk, ph = by_h.get((g["arm"], g["route"], g["seed"])), by_name.get((g["arm"], g["plain"]))
        out.append({"arm": g["arm"], "run": g["run"], "L": g["L"], "H": g["H"], "D": g["D"],
                    "K": g["route"], "seed": g["seed"], "routed": model(g),
                    "plain_k": model(pk) if pk else None, "plain_h": model(ph) if ph else None})
    return sorted(out, key=lambda c: (c["arm"], c["H"], c["K"], c["seed"]))


def head(names):
    return ["H", "K", "model", "D", "seeds", "val loss", "bpb"] + [
        "%s acc." % k for k in names] + ["overlap"]


def row_cells(cs, which, names):
    """One table row: one of the three models (which: routed, plain_k or plain_h) over
    the seeds of a group."""
    c0, ms = cs[0], [c[which] for c in cs if c[which]]
    label = {"routed": "routed", "plain_k": "plain H = %d" % c0["K"],
             "plain_h": "plain H = %d" % c0["H"]}[which]
    col = lambda f: [f(m) for m in ms]  # noqa: E731
    return [str(c0["H"]), str(c0["K"]), label, str(ms[0]["D"]) if ms else "–", str(len(ms)),
            pm(col(lambda m: m["val_loss"]), 4), pm(col(lambda m: m["bpb"]), 3)] + [
        pm(col(lambda m: m["accuracy"].get(k)), 3) for k in names] + [
        pm(col(lambda m: m["overlap"]), 2)]


def table(g, arm, names):
    return [row_cells(cs, which, names) for (a, _, _), cs in g.items() if a == arm
            for which in MODELS]


def difference(cs, which):
    """The routed minus the plain model's bits per byte, the mean of the per-seed
    differences over the seeds where both finished, in words, or that there is no such
    seed."""
    d = [c["routed"]["bpb"] - c[which]["bpb"] for c in cs if c[which]]
    H = cs[0]["K"] if which == "plain_k" else cs[0]["H"]
    if not d:
        return "plain H = %d has no finished run of these seeds in the sweep" % H
    m, sd, n = mean_sd(d)
    return "routed − plain H = %d is %+.3f bits per byte (%s%s)" % (
        H, m, "s.d. %.3f over %d seeds" % (sd, n) if n > 1 else "one seed",
        ", every seed worse" if n > 1 and min(d) > 0 else ", every seed better"
        if n > 1 and max(d) < 0 else "")


def sentences(g, arm):
    """Per H and K of one arm: the routed model's bits per byte against the two plain
    models, in words."""
    out = []
    for (a, H, K), cs in g.items():
        if a != arm:
            continue
        out.append("H = %d, K = %d: %s; %s." % (
            H, K, difference(cs, "plain_k"), difference(cs, "plain_h")))
    return out


def skipped(routes, heads):
    """The sentence on the K >= H the sweep does not train (routing every head of a
    layer is the plain run); "" when there is none."""
    cases = ["K = %d at %s" % (K, ", ".join("H = %d" % H for H in heads if H <= K))
             for K in routes if any(H <= K for H in heads)]
    return ("Not trained, as K ≥ H routes every head and is the plain run: %s." %
            "; ".join(cases)) if cases else ""


def intro(routes, heads):
    return ("Each routed run is a plain run trained again with ./train --head-routing K "
            "(K = %s; docs/ablation.md, \"Routing sweep\"). A token of it uses K heads per "
            "layer, so it is compared with the plain run of H = K of the same arm, depth "
            "and seed (as many heads per token, each of the arm's head size) and with its "
            "twin, the plain run of the same H. Each row is over the seeds whose routed "
            "run finished. Per run: %s. %s" % (", ".join(map(str, routes)), CSV,
                                               skipped(routes, heads))).rstrip()


def md_lines(cmp, routes, heads, arms, titles, unit):
    """The section's markdown lines; none for a sweep without --head-routing."""
    if not routes:
        return []
    g, said, names = twin_groups(cmp, arms, "K"), ablate_legend.Once(), names_of(cmp)
    md = lambda h, b: ["| " + " | ".join(h) + " |", "|" + "|".join(  # noqa: E731
        "---" for _ in h) + "|"] + ["| " + " | ".join(r) + " |" for r in b]
    out = [SECTION, "", intro(routes, heads), ""]
    for arm in arms:
        rows = table(g, arm, names)
        if rows:
            out += ["**%s**" % titles[arm], "", TABLE, ""] + md(head(names), rows) + [
                ""] + said.md(head(names), unit) + [" ".join(sentences(g, arm)), ""]
    if not cmp:
        out += ["No routed run has finished yet.", ""]
    return out


def html_part(cmp, routes, heads, arms, titles, unit):
    """The section on index.html: the table per arm, its legend and sentences."""
    if not routes:
        return ""
    e = html.escape
    g, names = twin_groups(cmp, arms, "K"), names_of(cmp)
    out = ["<h2>%s</h2><p>%s</p>" % (e(SECTION[3:]), e(intro(routes, heads)))]
    for arm in arms:
        rows = table(g, arm, names)
        if rows:
            out.append("<h3>%s</h3><table><tr>%s</tr>%s</table><p>%s</p>" % (
                e(titles[arm]), "".join("<th>%s</th>" % e(h) for h in head(names)),
                "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % e(c) for c in r)
                        for r in rows), e(" ".join(sentences(g, arm)))))
    if cmp:
        out.append(ablate_legend.html(head(names), unit, e))
    return "\n".join(out)


def csv_records(cmp):
    """routing.csv's columns and one record per comparison."""
    names = names_of(cmp)
    cols = ["arm", "run", "L", "H", "D", "K", "seed", "plain_k", "plain_h"] + [
        p + f for f in ("bpb", "val_loss", "overlap") for p in MODELS.values()] + [
        p + k.replace("-", "_") + "_accuracy" for k in names for p in MODELS.values()]
    recs = []
    for c in cmp:
        rec = {k: c[k] for k in ("arm", "run", "L", "H", "D", "K", "seed")}
        for which, p in MODELS.items():
            m = c[which]
            if p and m:
                rec[which] = m["run"]
            for f in ("bpb", "val_loss", "overlap"):
                rec[p + f] = num(m[f]) if m else None
            for k in names:
                rec[p + k.replace("-", "_") + "_accuracy"] = m["accuracy"].get(k) if m else None
        recs.append(rec)
    return cols, recs


def write_csv(path, cmp):
    cli.write_file(path, csv_text(*csv_records(cmp)))


def table_keys(md, arm_title):
    """The (H, K, model) cells of the arm's routing table in ablation.md; None if absent."""
    cells = ablate_relations.arm_table_cells(md, SECTION, arm_title, TABLE)
    return None if cells is None else [tuple(c[:3]) for c in cells]


def check(outdir, md, routes, want, titles):
    """routes: the sweep's K; want: {arm: [(H, K)]} the routed runs it trains. The
    section is there when the sweep routes; its table per arm holds three rows (routed,
    plain H = K, plain H = H) per H and K, and routing.csv a row per arm and routed
    run; returns the problems found."""
    if not routes:
        return ["ablation.md: '%s' without routed runs" % SECTION] if SECTION in md else []
    if SECTION not in md:
        return ["ablation.md: no section '%s'" % SECTION]
    problems = []
    for arm, keys in want.items():
        wanted = [(str(H), str(K), m) for H, K in sorted(set(keys))
                  for m in ("routed", "plain H = %d" % K, "plain H = %d" % H)]
        got = table_keys(md, titles[arm])
        if got != wanted:
            problems.append("ablation.md: arm %s: '%s' rows %s, expected %s" % (
                arm, TABLE, got, wanted))
    path = os.path.join(outdir, CSV)
    rows = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    n = sum(len(v) for v in want.values())
    if len(rows) != n:
        problems.append("%s: %d rows, expected %d (one per arm and routed run)" % (
            CSV, len(rows), n))
    return problems
