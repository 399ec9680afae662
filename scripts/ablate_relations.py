"""ablate_relations: the ablation report's "one head against several" section.

The claim it tests: a single head must average conflicting needs into one muddy
pattern, while several heads split them, one per relation. For every relation a
run's heads/summary.json lists, and each (arm, H), it gives the best head's attention
on the relation's key against the uniform head's, the seeds in which some head
is above the relation's bar, the loss on the tokens the relation predicts; per
(arm, H) how many relations are served and by how many distinct heads; the
sentences generated from those numbers; relations.csv (per run and relation); and
plots/relations_ARM.svg, each H's heads x relations matrix from heads.csv.

Definitions (docs/ablation.md, "One head against several"):
- bar: summary.json's "bar" for the relation (ablate_report's loader refuses a
  summary.json whose relations carry none).
- a head attends to a relation when its per-head score (heads.csv) is above the
  bar (the best head's, from summary.json, counts too); a closed head (heads.csv's
  gate 0, docs/heads.md) attends to nothing: its output never reaches the model.
- a head is needed for a relation when silencing it alone costs the relation at
  least ./infer's needed share of its logit difference (heads.csv's "needed"
  column, docs/heads.md "Needed heads").
- a head serves a relation when it attends and is needed; a relation is served in
  a run when some head serves it. Reports written before the ablation per relation
  have no "needed" column: there a relation is served when its best head is above
  the bar, and its serving heads are the heads that attend.
- distinct heads: the number of different heads serving the served relations;
  shared heads: those serving two or more.
- minimal pairs (summary.json's accuracy and logit_diff) and, per head count, how
  many relations the most-needed head of H = 1 is needed for, and how many
  relations have a head of their own (a head that serves it and no other).

Loading the runs and the rest of the report are ablate_report.py's; the chart
primitives svgchart.py's. Standard library only.
"""
import csv
import math
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from collections import Counter

import ablate_legend
import cli
from ablate_stats import csv_text, mean_sd, num, pm
from svgchart import Svg, colour_scale, heatmap

# heads.csv names each relation's per-head score after the relation. Reports written
# before it had a previous-token column give the pattern score `prev` instead, the
# mean A[i][i-1] over the analysis windows (docs/heads.md, "Per-head metrics").
HEAD_COLUMN = {"previous-token": "prev"}
SECTION = "## One head against several: the relations"
# The caption of the minimal-pair table (reports with the ablation per relation).
CAUSAL = "Minimal pairs and needed heads by arm and H:"
# The captions the section's tables follow; check() finds the tables by them.
BY_RELATION = "Relations by arm and H:"
SERVED = "Relations served per arm and H:"
# The heads x relations figures fit a 1,300 px window: panels wrap into rows within
# MAX_WIDTH, with SCALE_ROOM at the right for the colour scale.
MAX_WIDTH, SCALE_ROOM = 1280, 110
CSV_COLUMNS = ["arm", "run", "H", "D", "seed", "relation", "best_head", "attention",
               "uniform", "ratio", "bar", "served", "serving_heads", "loss",
               "rows", "attended", "attending_heads", "needed_heads", "needed_head", "accuracy",
               "logit_diff", "pairs"]
# The per-run totals ablation.csv gets when the runs have relations.
RUN_COLUMNS = ["relations_scored", "relations_served", "relations_distinct_heads",
               "relations_shared_heads"]
# A relation is learned where its minimal-pair accuracy is at least this in every seed
# (docs/heads.md, "Minimal pairs"; make check-heads's bar).
LEARNED = 0.9


def bar_of(entry):
    """One relation's bar, its "bar" in summary.json; NaN without one, which no
    attention is above."""
    return num((entry or {}).get("bar"))


def check_bars(summary, path):
    """ValueError naming path when a relation of a summary.json has no finite "bar":
    the bars come from ./infer, never from a copy here."""
    for k, e in (summary.get("relations") or {}).items():
        if not math.isfinite(bar_of(e)):
            raise ValueError("%s: relation %s has no \"bar\"; it comes from an ./infer older "
                             "than its relation table: run ./infer --heads again" % (path, k))


def head_key(label):
    """Sort key of a head label L<l>H<h>: layer, then head."""
    m = re.match(r"L(\d+)H(\d+)$", label or "")
    return (int(m.group(1)), int(m.group(2))) if m else (1 << 30, 0)


def head_label(h):
    return "L%dH%d" % (int(h["layer"]), int(h["head"]))


def head_score(h, name):
    """One heads.csv row's mean attention on the relation's key; NaN without a column."""
    col = name if name in h else HEAD_COLUMN.get(name)
    return num(h.get(col)) if col else float("nan")


def plus_list(cell):
    """A heads.csv list cell ("bracket+names") as a set; empty for "" or None."""
    return set((cell or "").split("+")) - {""}


def judge(relations, heads, names):
    """One run: relations is its summary.json "relations", heads its heads.csv rows
    (dicts), names the relations to judge. A masked head (silenced by --mask) and a
    closed one (heads.csv's gate 0: the model's own gate shut it) attend to and serve
    nothing. Returns {"relations": {name: {best_head,
    attention, uniform, ratio, loss, rows, bar, attended (0/1), served
    (0/1), heads (the serving heads' labels), attending, needed (labels),
    needed_head, accuracy, logit_diff, pairs}}, "scored", "served",
    "distinct_heads", "shared_heads", "causal" (the report has the ablation per
    relation), "needed_per_head" ({label: relations it is needed for})}."""
    live = [h for h in heads if num(h.get("masked")) != 1 and num(h.get("gate")) != 0]
    labels = {head_label(h) for h in live}
    causal = any("needed" in h for h in live)
    out, uses = {}, Counter()
    for k in names:
        e = relations.get(k) or {}
        bar = bar_of(e)
        att, uni = num(e.get("attention")), num(e.get("uniform"))
        attended = math.isfinite(att) and att > bar
        attending = {head_label(h) for h in live if head_score(h, k) > bar}
        best = e.get("best_head")
        attending |= {best} if attended and best and (not heads or best in labels) else set()
        needed = {head_label(h) for h in live if k in plus_list(h.get("needed"))}
        if causal:
            serving = attending & needed
        else:
            serving = attending if attended else set()
        uses.update(serving)
        out[k] = {"best_head": e.get("best_head"), "attention": att, "uniform": uni,
                  "ratio": att / uni if uni > 0 else float("nan"), "loss": num(e.get("loss")),
                  "rows": e.get("rows"), "bar": bar,
                  "attended": int(attended), "served": int(bool(serving)),
                  "heads": sorted(serving, key=head_key),
                  "attending": sorted(attending, key=head_key),
                  "needed": sorted(needed, key=head_key), "needed_head": e.get("needed_head"),
                  "accuracy": num(e.get("accuracy")), "logit_diff": num(e.get("logit_diff")),
                  "pairs": e.get("pairs")}
    per_head = Counter({head_label(h): 0 for h in live})
    for k in names:
        per_head.update(out[k]["needed"])
    return {"relations": out, "scored": len(names),
            "served": sum(r["served"] for r in out.values()), "distinct_heads": len(uses),
            "shared_heads": sum(1 for n in uses.values() if n >= 2), "causal": causal,
            "needed_per_head": dict(per_head)}


def own_heads(j, names):
    """The relations of one judged run with a head of their own: a head that serves
    the relation and no other."""
    uses = Counter(h for k in names for h in j["relations"][k]["heads"])
    return [k for k in names if any(uses[h] == 1 for h in j["relations"][k]["heads"])]


def annotate(rows, names):
    """Judge every row (one per arm and run): row["judged"], and the totals of
    RUN_COLUMNS for ablation.csv."""
    for r in rows:
        j = judge(r["relations"], r.get("head_rows") or [], names)
        r["judged"] = j
        r.update({"relations_scored": j["scored"], "relations_served": j["served"],
                  "relations_distinct_heads": j["distinct_heads"],
                  "relations_shared_heads": j["shared_heads"]})


def write_csv(path, rows, names):
    """relations.csv: one row per arm, run and relation."""
    def cells():
        for r in rows:
            for k in names:
                x = r["judged"]["relations"][k]
                yield dict(x, arm=r["arm"], run=r["run"], H=r["H"], D=r["D"], seed=r["seed"],
                           relation=k, serving_heads=" ".join(x["heads"]),
                           attending_heads=" ".join(x["attending"]),
                           needed_heads=" ".join(x["needed"]))
    cli.write_file(path, csv_text(CSV_COLUMNS, cells()))


def whole(x):
    """A mean count: whole when it is, else one decimal."""
    return "%d" % x if x == int(x) else "%.1f" % x


def mean_range(values):
    """'mean (min–max)' of counts; the mean alone when they are all equal."""
    m = sum(values) / len(values)
    lo, hi = min(values), max(values)
    return whole(m) if lo == hi else "%s (%d–%d)" % (whole(m), lo, hi)


def named_head(x):
    """A judged relation's best head as the report names it: "none" when its attention
    is not above the uniform head's (as ./infer --heads prints it), None without one."""
    if not x["best_head"]:
        return None
    return x["best_head"] if x["attention"] > x["uniform"] else "none"


def best_heads(xs):
    """The best heads over seeds, most frequent first: 'L2H1 ×3, L3H0', "none" for the
    seeds whose best head is not above the uniform head."""
    n = Counter(named_head(x) for x in xs if named_head(x))
    return ", ".join(h + (" ×%d" % n[h] if n[h] > 1 else "") for h in sorted(
        n, key=lambda h: (-n[h], head_key(h)))) or "–"


def groups(rows, arms):
    """{(arm, H): rows} in the report's order, for the arms that have rows."""
    out = {}
    for r in sorted(rows, key=lambda r: (arms.index(r["arm"]), r["H"], r["seed"])):
        out.setdefault((r["arm"], r["H"]), []).append(r)
    return out


def tables(rows, names, arms, unit):
    """The two tables: per relation, arm and H; and per arm and H. unit: the loss's
    (nats per byte, or per token for a --vocab sweep)."""
    g = groups(rows, arms)
    head = ["relation", "arm", "H", "D", "best head", "best-head attn.", "uniform", "ratio", "bar",
            "seeds above bar", "loss (%s)" % unit]
    body = []
    for k in names:
        for (arm, H), rs in g.items():
            xs = [r["judged"]["relations"][k] for r in rs]
            att, uni = mean_sd([x["attention"] for x in xs])[0], mean_sd(
                [x["uniform"] for x in xs])[0]
            bars = sorted({x["bar"] for x in xs})
            body.append([k, arm, str(H), str(rs[0]["D"]), best_heads(xs),
                         pm([x["attention"] for x in xs], 3),
                         "%.3f" % uni if math.isfinite(uni) else "–",
                         "%.1f" % (att / uni) if uni > 0 and math.isfinite(att) else "–",
                         "/".join("%.2f" % b for b in bars),
                         "%d/%d" % (sum(x["served"] for x in xs), len(xs)),
                         pm([x["loss"] for x in xs], 3)])
    head2 = ["arm", "H", "D", "heads (L·H)", "relations", "served, mean (range)",
             "distinct heads, mean (range)", "heads serving 2+, mean (range)", "seeds"]
    body2 = []
    for (arm, H), rs in g.items():
        js = [r["judged"] for r in rs]
        body2.append([arm, str(H), str(rs[0]["D"]), str(len(rs[0].get("head_rows") or []) or
                                                         "–"), str(js[0]["scored"]),
                      mean_range([j["served"] for j in js]),
                      mean_range([j["distinct_heads"] for j in js]),
                      mean_range([j["shared_heads"] for j in js]), str(len(js))])
    return (head, body), (head2, body2)


def causal_table(rows, names, arms):
    """Per relation with minimal pairs (the others have none to score), arm and H:
    accuracy and logit difference
    (mean ± s.d. over seeds), the needed head of each seed, and the seeds in which
    some head attends, is needed, and serves."""
    g = groups(rows, arms)
    head = ["relation", "arm", "H", "D", "accuracy", "logit diff", "needed head",
            "seeds attending", "seeds needing a head", "seeds served"]
    body = []
    for k in names:
        for (arm, H), rs in g.items():
            xs = [r["judged"]["relations"][k] for r in rs]
            if not any(math.isfinite(x["accuracy"]) for x in xs):
                continue  # no minimal pairs: the tables above have its attention
            n = Counter(x["needed_head"] for x in xs if x["needed_head"])
            needed_heads = ", ".join(h + (" ×%d" % n[h] if n[h] > 1 else "") for h in sorted(
                n, key=lambda h: (-n[h], head_key(h)))) or "–"
            acc = [x["accuracy"] for x in xs if math.isfinite(x["accuracy"])]
            ld = [x["logit_diff"] for x in xs if math.isfinite(x["logit_diff"])]
            body.append([k, arm, str(H), str(rs[0]["D"]), pm(acc, 3) if acc else "–",
                         pm(ld, 2) if ld else "–", needed_heads,
                         "%d/%d" % (sum(1 for x in xs if x["attending"]), len(xs)),
                         "%d/%d" % (sum(1 for x in xs if x["needed"]), len(xs)),
                         "%d/%d" % (sum(x["served"] for x in xs), len(xs))])
    return head, body


def causal_sentences(g, arm, names):
    """From the ablation per relation: at H = 1, how many relations the most-needed
    head is needed for; at every H, how many relations have a head of their own
    (own_heads); which relations are learned (accuracy >= 0.9 in every seed) and which are
    not (mean accuracy <= 0.6)."""
    mine = {H: [r["judged"] for r in rs] for (a, H), rs in g.items() if a == arm}
    if not any(j["causal"] for js in mine.values() for j in js):
        return []
    out = []
    if 1 in mine:
        most = [max(j["needed_per_head"].values() or [0]) for j in mine[1]]
        heads = [sum(1 for v in j["needed_per_head"].values() if v) for j in mine[1]]
        out.append("At H = 1 the head needed for the most relations is needed for %s of %d "
                   "(over %s); heads needed for some relation: %s of %d (one per layer)." % (
                       mean_range(most), len(names), seeds_text(len(most)),
                       mean_range(heads), len(mine[1][0]["needed_per_head"])))
    parts = []
    for H, js in mine.items():
        own = [len(own_heads(j, names)) for j in js]
        parts.append("%s at H = %d" % (mean_range(own), H))
    out.append("Relations with a head of their own (a head that serves the relation and "
               "no other), of %d: %s." % (len(names), ", ".join(parts)))
    paired = [k for k in names if any(math.isfinite(j["relations"][k]["accuracy"])
                                      for js in mine.values() for j in js)]
    for H, js in mine.items():
        learned = [k for k in paired if all(j["relations"][k]["accuracy"] >= LEARNED for j in js)]
        chance = [k for k in paired if mean_sd([j["relations"][k]["accuracy"]
                                                for j in js])[0] <= 0.6]
        out.append("At H = %d, learned (minimal-pair accuracy >= 0.9 in every seed): %s; "
                   "near chance (mean <= 0.6): %s." % (H, ", ".join(learned) or "none",
                                                      ", ".join(chance) or "none"))
    return out


def seeds_text(n):
    return "%d seed%s" % (n, "" if n == 1 else "s")


def serving_words(g, arm):
    """How a served relation's head is described: with the ablation per relation, a
    serving head attends and is needed; without it, a head above the bar."""
    causal = any(r["judged"]["causal"] for (a, _), rs in g.items() if a == arm for r in rs)
    return "a serving head" if causal else "a head above the bar"


def served_sentence(arm_title, g, arm):
    """'At H = 1, 2 of 6 relations have a head at their bar (range 1–3 over 5 seeds)
    with 2 distinct heads; at H = 4, ...' for one arm."""
    mine = {H: [r["judged"] for r in rs] for (a, H), rs in g.items() if a == arm}
    words = serving_words(g, arm)
    if mine and not any(j["served"] for js in mine.values() for j in js):
        n = max(j["scored"] for js in mine.values() for j in js)
        return "**%s**: at every H (%s), none of the %d relation%s has %s, " \
            "in any seed." % (arm_title, ", ".join(map(str, mine)), n, "" if n == 1 else "s",
                              words)
    parts = []
    for H, js in mine.items():
        served = [j["served"] for j in js]
        distinct = [j["distinct_heads"] for j in js]
        if min(served) != max(served):
            spread = "range %d–%d over %s" % (min(served), max(served), seeds_text(len(js)))
        else:
            spread = "the same in each of %s" % seeds_text(len(js)) if len(js) > 1 else \
                "one seed"
        mean = sum(served) / len(js)
        s = "at H = %d, %s of %d relation%s %s %s (%s)" % (
            H, whole(mean), js[0]["scored"], "" if js[0]["scored"] == 1 else "s",
            "has" if mean == 1 else "have", words, spread)
        if sum(served):
            s += " with %s distinct head%s" % (mean_range(distinct), "" if min(distinct) ==
                                                max(distinct) == 1 else "s")
        parts.append(s)
    text = "; ".join(parts)
    return "**%s**: %s." % (arm_title, text[0].upper() + text[1:]) if parts else ""


def shared_sentence(g, arm):
    """In how many runs one head serves two or more relations, per H; nothing when no
    run serves any relation."""
    if not any(r["judged"]["served"] for (a, _), rs in g.items() if a == arm for r in rs):
        return ""
    parts = []
    for (a, H), rs in g.items():
        if a == arm:
            n = sum(1 for r in rs if r["judged"]["shared_heads"])
            parts.append("%d of %d at H = %d" % (n, len(rs), H))
    return "Runs in which one head serves two or more relations: %s." % ", ".join(parts) \
        if parts else ""


def never_always(g, arm, names):
    """The relations no head serves at any H of the arm, in any seed (with the best
    attention seen, against the bar), and those served at every H in every seed."""
    mine = [r for (a, _), rs in g.items() if a == arm for r in rs]
    out = []
    never = [k for k in names if not any(r["judged"]["relations"][k]["served"] for r in mine)]
    causal = any(r["judged"]["causal"] for r in mine)
    if never:
        out.append("%s %s." % (
            "The best head's attention in any run, against the bar:" if len(never) == len(
                names) else "No head serves at any H, in any seed: the best attention on" if causal else
            "No head is above the bar at any H, in any seed, for", ", ".join(
                "%s (best %.3f, bar %.2f)" % (k, max(num(r["judged"]["relations"][k][
                    "attention"]) for r in mine), mine[0]["judged"]["relations"][k]["bar"])
                if any(math.isfinite(num(r["judged"]["relations"][k]["attention"]))
                       for r in mine) else "%s (no score)" % k for k in never)))
    always = [k for k in names if all(r["judged"]["relations"][k]["served"] for r in mine)]
    if always and len(always) < len(names):
        out.append("Served at every H in every seed: %s." % ", ".join(always))
    elif always:
        out.append("Every relation is served at every H in every seed.")
    return out


def divided_sentence(g, arm, names):
    """At H = 1 there is one head per layer: its best attention on each relation
    against the best head's at each larger H (means over seeds)."""
    if (arm, 1) not in g:
        return ""
    others = sorted(H for a, H in g if a == arm and H > 1)
    parts = []
    for k in names:
        at = {H: mean_sd([r["judged"]["relations"][k]["attention"] for r in g[arm, H]])[0]
              for H in [1] + others}
        if not math.isfinite(at[1]):
            continue
        parts.append("%s %.3f%s" % (k, at[1], " against %s" % ", ".join(
            "%.3f (H = %d)" % (at[H], H) for H in others if math.isfinite(at[H]))
            if others else ""))
    if not parts:
        return ""
    return ("At H = 1 the one head per layer divides its attention: the best H = 1 head's "
            "attention on each relation's key%s (mean over seeds): %s." % (
                ", against the best head's at larger H" if others else "", "; ".join(parts)))


def bars_sentence(rows, names):
    """Which bar each relation was judged by (summary.json's "bar")."""
    cells = ", ".join("%s %s" % (k, "/".join("%.2f" % b for b in sorted(
        {r["judged"]["relations"][k]["bar"] for r in rows}))) for k in names)
    return "Bars (from summary.json's \"bar\"): %s." % cells


INTRO = ("Does one head have to average several relations into one muddy pattern, and do "
         "several heads split them? Where the runs' reports carry the ablation per relation, "
         "a head serves a relation when it attends to the relation's key above the bar and "
         "silencing it alone takes away at least the needed share of the relation's logit "
         "difference (docs/heads.md); a relation is served when some head serves it. "
         "Per relation, arm and H: the best head of each seed "
         "(×n: in n seeds), its mean attention on the relation's key (summary.json, mean ± "
         "s.d. over seeds), the uniform head's, their ratio, the bar, the seeds in which "
         "some head is above the bar, and the loss (%s) on the tokens the relation "
         "predicts. In reports without the ablation, a relation is served in a run when its "
         "best head is above the bar, by every head whose per-head score in heads.csv is "
         "above the bar. Distinct heads counts the different heads serving the served "
         "relations, and a head serving 2+ serves two or more.")


def section(rows, names, arms, titles, unit):
    """The section's markdown lines; none without relations. unit: the loss's."""
    if not names or not rows:
        return []
    md = lambda h, b: ["| " + " | ".join(h) + " |", "|" + "|".join(  # noqa: E731
        "---" for _ in h) + "|"] + ["| " + " | ".join(r) + " |" for r in b]
    g = groups(rows, arms)
    t1, t2 = tables(rows, names, arms, unit)
    key = ablate_legend.md
    out = [SECTION, "", INTRO % unit, "", bars_sentence(rows, names), "", BY_RELATION, ""] + md(
        *t1) + [""] + key(t1[0], unit) + [SERVED, ""] + md(*t2) + [""] + key(t2[0], unit)
    causal = any(r["judged"]["causal"] for r in rows)
    if causal:
        out += [CAUSAL, "", "Accuracy: the share of minimal pairs where the right token's "
                "logit beats the wrong one's (chance 0.5); logit diff: its mean margin "
                "(mean ± s.d. over seeds); needed head: the head whose silencing costs the "
                "relation most, per seed; seeds attending / needing a head / served: the "
                "seeds in which some head attends above the bar, some head is needed, some "
                "head does both.", ""] + md(*causal_table(rows, names, arms)) + [""] + key(
                    causal_table(rows, names, arms)[0], unit)
    for arm in arms:
        if not any(a == arm for a, _ in g):
            continue
        said = [served_sentence(titles[arm], g, arm), shared_sentence(g, arm)] + never_always(
            g, arm, names) + causal_sentences(g, arm, names) + [divided_sentence(g, arm, names)]
        out += [" ".join(s for s in said if s), ""]
    out += ["Heads × relations, each H's first seed: attention in %s%s." % (", ".join(
        "plots/relations_%s.svg" % a for a in arms if any(x == a for x, _ in g)),
        "; the cost of silencing each head in %s" % ", ".join(
            "plots/ablation_%s.svg" % a for a in arms if any(x == a for x, _ in g))
        if causal else ""), ""]
    return out


def head_cost(h, name):
    """One heads.csv row's cost to a relation (cost_NAME); NaN without a column."""
    return num(h.get("cost_" + name))


def matrix_plot(rows, names, arm, title, causal=False):
    """plots/relations_ARM.svg: per H, the first seed's heads x relations matrix (cell:
    that head's mean attention on the relation's key, from heads.csv), the cells
    above the relation's bar outlined; one colour scale 0 to 1 for every panel.
    With causal, plots/ablation_ARM.svg: the cell is the cost of silencing that head
    (the share of the relation's logit difference it takes away), outlined where the
    head serves the relation (attends and is needed)."""
    g = {H: rs for (a, H), rs in groups(rows, [arm]).items() if a == arm}
    cw, ch, head_room, gap, label_w = 44, 16, 80, 40, 52
    # Panels left to right, wrapped into rows so the figure stays within MAX_WIDTH
    # (the colour scale keeps SCALE_ROOM at the right); every cell tall enough for its value.
    panels, x, y, row_h, right = [], 20, 0, 0, 0
    for H, rs in sorted(g.items()):
        first = min(rs, key=lambda r: r["seed"])
        heads = sorted(first.get("head_rows") or [], key=lambda h: head_key(head_label(h)))
        w = label_w + cw * len(names)
        if panels and x + w > MAX_WIDTH - SCALE_ROOM:
            x, y, row_h = 20, y + row_h, 0
        panels.append((x + label_w, y + head_room + 40, H, first, heads))
        row_h = max(row_h, head_room + 40 + max(len(heads), 1) * ch)
        right = max(right, x + w)
        x += w + gap
    top, scale_h = 40 + head_room, 200
    width = int(min(max(right + SCALE_ROOM, 780), MAX_WIDTH))
    lines = ["Cell: the head's mean attention on the relation's key (heads.csv), in the first "
             "seed's model of each H.", "Outlined: above the relation's bar. Grey: no "
             "per-head score."]
    if causal:
        lines = ["Cell: the share of the relation's logit difference (of its loss, without "
                 "minimal pairs) that silencing the head alone takes away (heads.csv cost_*).",
                 "Outlined: the head serves the relation (attends above the bar and is "
                 "needed). Colours clip at 0 and 1."]
    # The caption wrapped to the picture's width (about 6 px a character at size 11),
    # so no line runs past the edge.
    lines = [w for line in lines for w in textwrap.wrap(line, int((width - 40) / 6.2))]
    height = y + row_h + 50 + 18 * len(lines)
    what = "cost of silencing" if causal else "attention"
    svg = Svg(width, int(height), "Heads x relations (%s): %s" % (what, title))
    svg.text(20, 24, "Heads × relations, %s: %s" % (what, title), size=14, weight="bold")
    for px, py, H, first, heads in panels:
        if causal:
            vals = [[head_cost(h, k) for k in names] for h in heads]
            marks = [[k in plus_list(h.get("serves")) for k in names] for h in heads]
        else:
            vals = [[head_score(h, k) for k in names] for h in heads]
            bars = [first["judged"]["relations"][k]["bar"] for k in names]
            marks = [[v > b for v, b in zip(row, bars)] for row in vals]
        heatmap(svg, px, py, vals, [head_label(h) for h in heads], names, cw, ch,
                marks=marks, show_values=True,
                title="H = %d (D = %d), seed %d" % (H, first["D"], first["seed"]))
    colour_scale(svg, width - SCALE_ROOM + 40, top, 16, scale_h, 0.0, 1.0, label=what)
    for k, line in enumerate(lines):
        svg.text(20, height - 18 * len(lines) + 18 * k, line, size=11, fill="#444")
    return svg


def write_plots(plots_dir, rows, names, arms, titles):
    """plots/relations_ARM.svg for each arm with rows, and plots/ablation_ARM.svg
    where the runs' reports carry the ablation per relation."""
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        if mine and names:
            cli.write_file(os.path.join(plots_dir, "relations_%s.svg" % arm),
                           matrix_plot(mine, names, arm, titles[arm]).render())
            if any(any("cost_" + k in h for k in names) for r in mine
                   for h in r.get("head_rows") or []):
                cli.write_file(os.path.join(plots_dir, "ablation_%s.svg" % arm),
                               matrix_plot(mine, names, arm, titles[arm], causal=True).render())


def table_cells(text, caption):
    """The rows (lists of cells) of the table that follows caption; None if absent."""
    if caption not in text:
        return None
    lines = []
    for line in text.split(caption, 1)[1].lstrip("\n").split("\n"):
        if not line.startswith("|"):
            break
        lines.append([c.strip() for c in line.strip("|").split("|")])
    return lines[2:]


def arm_table_cells(md, section, arm_title, caption):
    """The rows of the table under caption in one arm's part of a section of ablation.md
    (from the arm's bold title up to the next bold title); None if the section, the arm
    or its table is absent, so a missing table is never read from the next arm's part."""
    part = md.split(section, 1)[1] if section in md else ""
    if "**%s**" % arm_title not in part:
        return None
    return table_cells(part.split("**%s**" % arm_title, 1)[1].split("\n**", 1)[0], caption)


def check(outdir, md, names, arms, heads, n_rows):
    """The section, its two tables (a row per relation, arm and H; a row per arm and H),
    relations.csv (a row per arm, run and relation: n_rows · len(names)) and the plots;
    the problems found."""
    problems = []
    if not names:
        return ["ablation.md: '%s' without relations" % SECTION] if SECTION in md else []
    if SECTION not in md:
        return ["ablation.md: no section '%s'" % SECTION]
    part = md.split(SECTION, 1)[1]
    want1 = [[k, a, str(H)] for k in names for a in arms for H in heads]
    got1 = [c[:3] for c in table_cells(part, BY_RELATION) or []]
    if got1 != want1:
        problems.append("ablation.md: '%s' rows %s, expected %s" % (BY_RELATION, got1, want1))
    want2 = [[a, str(H)] for a in arms for H in heads]
    got2 = [c[:2] for c in table_cells(part, SERVED) or []]
    if got2 != want2:
        problems.append("ablation.md: '%s' rows %s, expected %s" % (SERVED, got2, want2))
    path = os.path.join(outdir, "relations.csv")
    got = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", newline="") as f:
            got = list(csv.DictReader(f))
    if len(got) != n_rows * len(names) or any(r["relation"] not in names for r in got):
        problems.append("relations.csv: %d rows, expected %d (%d runs × %d relations)" % (
            len(got), n_rows * len(names), n_rows, len(names)))
    for a in arms:
        try:
            ET.parse(os.path.join(outdir, "plots", "relations_%s.svg" % a))
        except (ET.ParseError, OSError) as e:
            problems.append("plots/relations_%s.svg: %s" % (a, e))
    return problems
