"""ablate_gates: the gate sweep's part of the ablation report (ablate.sh --head-gates).

A gated run is a plain run (same arm, H, D and seed) trained again with train's
--head-gates LAMBDA (learned hard-concrete gates, docs/heads.md). Per arm, H and
LAMBDA this module reports, mean ± s.d. over seeds where it is a number:
- open heads: heads.csv rows whose evaluation gate is above 0, of the L·H heads;
- the loss against the plain run: bits per byte of each (train's final line);
- the relations the open heads serve (attend above the bar and are needed,
  ablate_relations.judge on the gated run's heads.csv and summary.json; a closed
  head serves nothing), as "relation seeds/seeds";
- the open heads against the plain run's prune curve (./infer --heads
  --prune-curve, removing the least important head first): with k heads open, how
  many of them are among the k heads the plain model's curve keeps last (heads
  matched by layer and index: both runs start from the same weights), against the
  k·k/n a random choice of k heads would share on average; and the loss on the
  heads analysis's windows of the gated model beside the plain model's with only
  its last k heads kept.
Its outputs: the section SECTION of ablation.md, its table on index.html (html()),
and gates.csv (one row per arm and gated run). Loading the runs is
ablate_report.py's; standard library only.
"""
import csv
import html
import os
from collections import Counter

import ablate_relations
import cli
from ablate_stats import csv_text, mean_sd, num, pm, twin_groups

SECTION = "## Gate sweep: heads that close themselves"
TABLE = "Gated runs per arm, H and LAMBDA:"
CSV = "gates.csv"
CSV_COLUMNS = ["arm", "run", "plain", "H", "D", "seed", "lambda", "heads", "open",
               "open_heads", "bpb", "plain_bpb", "val_loss", "plain_val_loss",
               "relations_served", "kept_last", "overlap", "chance_overlap", "loss",
               "pruned_loss"]
# The table's columns, in order, each with the one line of legend printed under it in
# ablation.md and on index.html.
LEGEND = [
    ("H", "heads per layer"),
    ("D", "head size"),
    ("LAMBDA", "train's --head-gates: the weight of the expected number of open heads "
     "in the loss"),
    ("seeds", "gated runs finished (each compared with the plain run of its seed)"),
    ("open heads", "heads whose evaluation gate is above 0, of the model's L·H (mean "
     "± s.d. over seeds)"),
    ("bpb gated", "validation bits per byte of the gated model"),
    ("bpb plain", "the same for the plain model of the same H, D and seeds (LAMBDA = 0)"),
    ("gated − plain", "their difference, mean ± s.d. of the per-seed differences; "
     "positive: the gates cost loss"),
    ("relations the open heads serve", "relations some open head serves (attends above "
     "the bar and is needed), in how many seeds; none: in no seed"),
    ("open among kept last", "with k heads open, how many are among the k heads the "
     "plain model's prune curve keeps last, of k; in brackets what k random heads "
     "would share on average (k·k / heads); – without a prune curve"),
    ("loss gated / plain pruned", "loss on the heads analysis's windows of the "
     "gated model, and of the plain model with only its k last-kept heads (in val "
     "loss's unit)"),
]
HEAD = [name for name, _ in LEGEND]


def open_heads(row):
    """The labels of the open heads of a run (heads.csv gate > 0), in head order, and
    the number of heads; (None, n) when heads.csv has no gate column."""
    heads = row.get("head_rows") or []
    if not heads or "gate" not in heads[0]:
        return None, len(heads)
    return [ablate_relations.head_label(h) for h in heads if num(h.get("gate")) > 0], len(heads)


def kept_last(curve, k):
    """The k heads a prune curve (summary.json's "prune_curve": removed 0..n, each
    with the head removed at that step) removes last, and the loss with only them
    kept; (None, NaN) without a curve."""
    if not curve:
        return None, float("nan")
    order = [e["head"] for e in curve[1:]]
    return order[len(order) - k:] if k else [], num(curve[len(order) - k]["loss"])


def compare(g, p, names):
    """One gated row g against its plain row p (None when it has not finished): the
    numbers of gates.csv."""
    opened, n = open_heads(g)
    k = len(opened) if opened is not None else None
    j = ablate_relations.judge(g["relations"], g.get("head_rows") or [], names)
    served = [x for x in names if j["relations"][x]["served"]]
    out = {"arm": g["arm"], "run": g["run"], "plain": g["plain"], "H": g["H"], "D": g["D"],
           "seed": g["seed"], "lambda": g["gate"], "heads": n, "open": k,
           "open_heads": " ".join(opened or []), "bpb": g["bpb"], "val_loss": g["val_loss"],
           "relations_served": " ".join(served), "served": served,
           "loss": num(g.get("heads_base_loss")), "plain_bpb": None, "plain_val_loss": None,
           "kept_last": "", "overlap": None, "chance_overlap": None, "pruned_loss": None}
    if p is not None:
        out.update(plain_bpb=p["bpb"], plain_val_loss=p["val_loss"])
        last, loss = kept_last(p.get("prune_curve"), k or 0)
        if last is not None and k is not None:
            out.update(kept_last=" ".join(last), overlap=len(set(last) & set(opened)),
                       chance_overlap=k * k / max(1, len(p["prune_curve"]) - 1),
                       pruned_loss=loss)
    return out


def compare_all(gated, plain, names):
    """Every gated row against its plain row, by arm, H, LAMBDA, seed."""
    by = {(r["arm"], r["run"]): r for r in plain}
    out = [compare(g, by.get((g["arm"], g["plain"])), names) for g in gated]
    return sorted(out, key=lambda c: (c["arm"], c["H"], c["lambda"], c["seed"]))


def served_text(cs):
    n = Counter(x for c in cs for x in c["served"])
    return ", ".join("%s %d/%d" % (x, n[x], len(cs)) for x in sorted(n, key=lambda x: -n[x])) \
        or "none"


def row_cells(cs, layers):
    """One table row: a group of comparisons of the same arm, H and LAMBDA."""
    c0 = cs[0]
    paired = [c for c in cs if c["plain_bpb"] is not None]
    ov = [c for c in cs if c["overlap"] is not None]
    overlap = "–" if not ov else "%s of %s (%s)" % (
        pm([c["overlap"] for c in ov], 1), pm([c["open"] for c in ov], 1),
        pm([c["chance_overlap"] for c in ov], 1))
    losses = "–" if not ov else "%s / %s" % (pm([c["loss"] for c in ov], 3),
                                             pm([c["pruned_loss"] for c in ov], 3))
    opened = [c["open"] for c in cs if c["open"] is not None]
    return [str(c0["H"]), str(c0["D"]), "%g" % c0["lambda"], str(len(cs)),
            "%s of %d" % (pm(opened, 1), c0["heads"] or c0["H"] * layers) if opened else "–",
            pm([c["bpb"] for c in cs], 3),
            pm([c["plain_bpb"] for c in paired], 3) if paired else "–",
            "%+.3f" % mean_sd([c["bpb"] - c["plain_bpb"] for c in paired])[0] + (
                " ± %.3f" % mean_sd([c["bpb"] - c["plain_bpb"] for c in paired])[1]
                if len(paired) > 1 else "") if paired else "–",
            served_text(cs), overlap, losses]


def sentences(g, arm):
    """Per H and LAMBDA of one arm: open heads, the loss against the plain runs and the
    overlap with the prune curve, in words."""
    out = []
    for (a, H, lam), cs in g.items():
        if a != arm:
            continue
        opened = [c["open"] for c in cs if c["open"] is not None]
        paired = [c for c in cs if c["plain_bpb"] is not None]
        s = "H = %d, LAMBDA = %g: %s of %d heads stay open" % (
            H, lam, pm(opened, 1) if opened else "–", cs[0]["heads"])
        if paired:
            d = [c["bpb"] - c["plain_bpb"] for c in paired]
            m, sd, n = mean_sd(d)
            s += ", at %+.3f bits per byte against the plain model (%s%s)" % (
                m, "s.d. %.3f over %d seeds" % (sd, n) if n > 1 else "one seed",
                ", every seed worse" if min(d) > 0 else ", every seed better" if max(d) < 0
                else "")
        ov = [c for c in cs if c["overlap"] is not None]
        if ov:
            s += "; %s of the open heads are among those the plain model's prune curve " \
                "keeps last (random heads: %s)" % (pm([c["overlap"] for c in ov], 1),
                                                    pm([c["chance_overlap"] for c in ov], 1))
        out.append(s + ".")
    return out


def md_lines(cmp, arms, titles, layers):
    """The section's markdown lines; none without gated runs."""
    if not cmp:
        return []
    g = twin_groups(cmp, arms, "lambda")
    md = lambda h, b: ["| " + " | ".join(h) + " |", "|" + "|".join(  # noqa: E731
        "---" for _ in h) + "|"] + ["| " + " | ".join(r) + " |" for r in b]
    out = [SECTION, "", "Each gated run is a plain run trained again with ./train "
           "--head-gates LAMBDA; it is compared with the plain run of the same H, D and seed "
           "(docs/ablation.md, \"Gate sweep\"). Per run: %s." % CSV, ""]
    for arm in arms:
        rows = [row_cells(cs, layers) for (a, _, _), cs in g.items() if a == arm]
        if rows:
            out += ["**%s**" % titles[arm], "", TABLE, ""] + md(HEAD, rows) + [
                "", " ".join(sentences(g, arm)), ""]
    out += ["Columns:", ""] + ["- %s: %s." % (k, v) for k, v in LEGEND] + [""]
    return out


def html_part(cmp, arms, titles, layers):
    """The section on index.html: the table per arm and its legend."""
    if not cmp:
        return ""
    e = html.escape
    g = twin_groups(cmp, arms, "lambda")
    out = ["<h2>Gate sweep: heads that close themselves</h2>"]
    for arm in arms:
        rows = [row_cells(cs, layers) for (a, _, _), cs in g.items() if a == arm]
        if rows:
            out.append("<h3>%s</h3><table><tr>%s</tr>%s</table><p>%s</p>" % (
                e(titles[arm]), "".join("<th>%s</th>" % e(h) for h in HEAD),
                "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % e(c) for c in r)
                        for r in rows), e(" ".join(sentences(g, arm)))))
    out.append("<dl class=\"legend\">%s</dl>" % "".join(
        "<dt>%s</dt><dd>%s</dd>" % (e(k), e(v)) for k, v in LEGEND))
    return "\n".join(out)


def write_csv(path, cmp):
    cli.write_file(path, csv_text(CSV_COLUMNS, cmp))


def table_keys(md, arm_title):
    """The (H, LAMBDA) cells of the arm's gate table in ablation.md; none if absent."""
    return [(c[0], c[2]) for c in ablate_relations.arm_table_cells(md, SECTION, arm_title,
                                                                   TABLE) or []]


def check(outdir, md, want, titles):
    """want: {arm: [(H, LAMBDA)]} the gated runs the sweep asks for. The section's table
    per arm holds one row per H and LAMBDA, and gates.csv a row per arm and gated run;
    returns the problems found."""
    if not want:
        return ["ablation.md: '%s' without gated runs" % SECTION] if SECTION in md else []
    problems = []
    for arm, keys in want.items():
        wanted = sorted({(str(H), "%g" % lam) for H, lam in keys},
                        key=lambda k: (int(k[0]), float(k[1])))
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
        problems.append("%s: %d rows, expected %d (one per arm and gated run)" % (CSV, len(rows),
                                                                                   n))
    return problems
