"""ablate_page: the ablation report's short answer and its page, DIR/index.html.

The short answer is three questions answered in sentences computed from the
finished runs, per arm: does the loss (bits per byte, the unit every sweep shares)
fall with H, beyond the seed spread? which relations get a serving head of their
own (a head that attends above the relation's bar, is needed, and serves no other
relation), and from which H? how many heads can go, one at a time, for under 1% of
the loss? ablation.md opens with the same sentences; index.html shows them above
the figures, a loss table per arm and a link to every run's heads report.

The rows, their judged relations and the seed statistics come from ablate_report.py
and ablate_relations.py; this file only words them and lays out the page. Standard
library only.
"""
import html
import math
import os

import ablate_legend
import ablate_relations
from ablate_relations import LEARNED
from ablate_stats import mean_sd, num, pm

ANSWER = "## Short answer"
# A --quick sweep's runs are tens of steps of tiny models: they check that the pipeline
# runs end to end and learn next to nothing, so its page and ablation.md say so in
# place of a short answer.
QUICK_ANSWER = "## No short answer: a pipeline check"
QUICK_WARNING = ("--quick trains tiny models for tens of steps to check that the pipeline "
                 "runs end to end; models that short learn next to nothing, so what they "
                 "measured answers nothing. For an answer: scripts/ablate.sh --lesson (about "
                 "15 minutes on 2 cores) or a sweep without a preset.")
QUICK_MEASURED = "What the runs measured, to check the pipeline (not an answer):"
PAGE = "index.html"
# What the figures on the page show, in the order they appear; a file that the sweep
# did not write (no relations, no ablation per relation) is left out.
FIGURES = [("val_loss.svg", "Loss against H: bits per byte, mean ± 1 s.d. over seeds, "
            "each seed a faint dot; the left panel's axis starts at zero, the right "
            "panel zooms in and is marked as broken."),
           ("compromise.svg", "Compromise against H, per arm and depth L: the mean over "
            "relation pairs of the overlap (1: one head holds both keys of a row that two "
            "relations share, 0: each key has heads of its own; docs/heads.md), mean ± 1 s.d. "
            "over seeds."),
           ("relations_%s.svg", "Heads × relations, attention: each head's mean attention "
            "on the relation's key, first seed of each H; outlined above the relation's bar."),
           ("ablation_%s.svg", "Heads × relations, ablation: the share of the relation's "
            "logit difference that silencing the head alone takes away; outlined where the "
            "head serves the relation (attends and is needed).")]


# The compare pages ablate.py writes beside index.html (./infer --explore on several
# checkpoints, docs/explorer.md), and what each shows; the page links those that exist
# (a sweep's pages per depth, DEPTH_COMPARE, where there are any, else compare.html).
COMPARE = [("compare.html", "the first seed of each H and D on the start of the "
            "validation text, one box per model"),
           ("compare_gates.html", "the first seed of each H and D, the plain model beside "
            "its gated ones (each LAMBDA), on the same text")]
# A sweep of several depths has one compare page per depth L instead of compare.html.
DEPTH_COMPARE = ("compare-L%d.html", "the first seed of each H and D at L = %d on the start "
                 "of the validation text, one box per model")


def hs(values):
    return ", ".join(str(H) for H in values)


def loss_sentence(by_h, t_margin):
    """Does bits per byte fall with H: the per-H means ± s.d., and the smallest H
    against the largest, judged against the seed spread by t_margin(a, b) (ablate_
    report.beyond_noise: (mean a − mean b, t·s.e.) or None with one seed)."""
    heads = sorted(by_h)
    bpb = {H: [r["bpb"] for r in by_h[H]] for H in heads}
    n = min(len(v) for v in bpb.values())
    s = "Bits per byte (validation, mean ± s.d. over %s) at H = %s: %s." % (
        "%d seed%s" % (n, "" if n == 1 else "s") if n == max(len(v) for v in bpb.values())
        else "%d to %d seeds" % (n, max(len(v) for v in bpb.values())), hs(heads),
        ", ".join(pm(bpb[H], 3) for H in heads))
    if len(heads) < 2:
        return s + " One H only: nothing to compare."
    lo, hi = heads[0], heads[-1]
    best = min(heads, key=lambda H: mean_sd(bpb[H])[0])
    g = t_margin(bpb[lo], bpb[hi])
    if g is None:
        return s + (" With one seed there is no seed spread, so no verdict on whether the "
                    "loss falls with H (H = %d: %.3f, H = %d: %.3f)." % (
                        lo, mean_sd(bpb[lo])[0], hi, mean_sd(bpb[hi])[0]))
    diff, margin = g  # diff: mean at the smallest H minus mean at the largest
    if diff > margin:
        verdict = "The loss falls with H: H = %d is %.3f bits per byte below H = %d" % (
            hi, diff, lo)
    elif -diff > margin:
        verdict = "The loss rises with H: H = %d is %.3f bits per byte above H = %d" % (
            hi, -diff, lo)
    else:
        verdict = ("From H = %d to H = %d the loss does not move beyond the seed noise "
                   "(H = %d minus H = %d: %+.3f" % (lo, hi, hi, lo, -diff))
        return s + " " + verdict + ", margin %.3f). Lowest at H = %d." % (margin, best)
    return s + " " + verdict + ", more than the seed noise (t·s.e. margin %.3f). Lowest at " \
        "H = %d." % (margin, best)


def compromise_sentence(by_h, t_margin):
    """The compromise measure's mean overlap per H (summary.json's "compromise"), and
    the smallest H against the largest judged against the seed spread; "" when the
    reports carry none."""
    heads = sorted(by_h)
    ov = {H: [num(r.get("compromise_overlap")) for r in by_h[H]] for H in heads}
    ov = {H: [x for x in v if math.isfinite(x)] for H, v in ov.items()}
    heads = [H for H in heads if ov[H]]
    if not heads:
        return ""
    s = ("Compromise, the mean overlap over relation pairs that share a row (1: one head "
         "holds both keys, 0: each key has heads of its own; docs/heads.md) at H = %s: %s."
         % (hs(heads), ", ".join(pm(ov[H], 2) for H in heads)))
    if len(heads) < 2:
        return s
    lo, hi = heads[0], heads[-1]
    g = t_margin(ov[lo], ov[hi])
    if g is None:
        return s + " With one seed there is no seed spread to judge it by."
    diff, margin = g
    if abs(diff) > margin:
        return s + (" From H = %d to H = %d it %s by %.2f, more than the seed noise (margin "
                    "%.2f)." % (lo, hi, "falls" if diff > 0 else "rises", abs(diff), margin))
    return s + " From H = %d to H = %d it does not move beyond the seed noise (%+.2f, margin " \
        "%.2f)." % (lo, hi, -diff, margin)


def learned(rs, name):
    """Whether every seed's minimal-pair accuracy for `name` is at least LEARNED."""
    acc = [num(r["relations"].get(name, {}).get("accuracy")) for r in rs]
    return bool(acc) and all(math.isfinite(a) and a >= LEARNED for a in acc)


def accuracy_names(rows):
    """The relations with minimal pairs in some run, in summary.json's order."""
    return list(dict.fromkeys(k for r in rows for k, v in r["relations"].items()
                              if "accuracy" in v))


def learned_sentence(by_h):
    """Per H, the relations learned in every seed (minimal-pair accuracy >= LEARNED),
    and those learned at no H with their best mean accuracy; "" without minimal pairs."""
    heads = sorted(by_h)
    names = accuracy_names([r for rs in by_h.values() for r in rs])
    if not names:
        return ""
    parts = ["H = %d: %s" % (H, ", ".join(k for k in names if learned(by_h[H], k)) or "none")
             for H in heads]
    never = []
    for k in names:
        if not any(learned(by_h[H], k) for H in heads):
            best = max(heads, key=lambda H: mean_sd([num(r["relations"].get(k, {}).get(
                "accuracy")) for r in by_h[H]])[0])
            never.append("%s (best %s at H = %d)" % (k, pm([r["relations"].get(k, {}).get(
                "accuracy") for r in by_h[best]], 2), best))
    return ("Learned (minimal-pair accuracy %.1f or more in every seed): %s." % (
        LEARNED, "; ".join(parts)) + (" At no H: %s." % "; ".join(never) if never else ""))


def depth_sentence(rows, arm_parts, titles):
    """Across the depths of one arm: the relations learned at some H of a deeper model
    but at no H of the shallowest, which need that depth; "" with one depth."""
    by_l = {}
    for key in arm_parts:
        mine = [r for r in rows if r["arm"] == key]
        if mine:
            by_l[mine[0]["L"]] = mine
    if len(by_l) < 2:
        return ""
    depths = sorted(by_l)
    names = accuracy_names(rows)

    def at(L, k):
        by_h = {}
        for r in by_l[L]:
            by_h.setdefault(r["H"], []).append(r)
        return [H for H in sorted(by_h) if learned(by_h[H], k)]
    need = []
    for k in names:
        if at(depths[0], k):
            continue
        deeper = [(L, at(L, k)) for L in depths[1:] if at(L, k)]
        if deeper:
            L, hs_ = deeper[0]
            need.append("%s (learned at L = %d with H = %s; at L = %d at no H)" % (
                k, L, hs(hs_), depths[0]))
    def best(L, k):  # the best mean accuracy over H at depth L, as "0.74 ± 0.04 at H = 16"
        by_h = {}
        for r in by_l[L]:
            by_h.setdefault(r["H"], []).append(r)
        acc = {H: [r["relations"].get(k, {}).get("accuracy") for r in rs]
               for H, rs in by_h.items()}
        top = max(sorted(acc), key=lambda H: mean_sd([num(x) for x in acc[H]])[0])
        return "%s at H = %d" % (pm(acc[top], 2), top)
    never = ["%s (best %s)" % (k, ", ".join("L = %d: %s" % (L, best(L, k)) for L in depths))
             for k in names if not any(at(L, k) for L in depths)]
    out = ("Relations that need more than %d layer%s: %s." % (
        depths[0], "" if depths[0] == 1 else "s", "; ".join(need)) if need else
        "Across depths: every relation learned at some depth is learned at L = %d too." %
        depths[0] if any(at(L, k) for L in depths for k in names) else
        "Across depths: no relation is learned at any depth.")
    if never:
        out += " Learned at no depth and no H of this sweep: %s." % "; ".join(never)
    return out


def own_serving(judged, name):
    """One run: does some head serve `name` and no other relation?"""
    return name in ablate_relations.own_heads(judged, list(judged["relations"]))


def relations_sentence(by_h, names):
    """Per relation, the H at which every seed has a serving head of its own ("from
    H = X on" when that holds for every larger H of the sweep too), and the relations
    that get one at no H, with the most seeds any H reached."""
    heads = sorted(by_h)
    if not names or not all("judged" in r for rs in by_h.values() for r in rs):
        return "No relation was scored on this validation text, so the question of heads " \
            "of their own does not arise here."
    causal = any(r["judged"]["causal"] for rs in by_h.values() for r in rs)
    got, some, none = [], [], []
    for k in names:
        counts = {H: sum(own_serving(r["judged"], k) for r in by_h[H]) for H in heads}
        every = [H for H in heads if counts[H] == len(by_h[H])]
        if not every:
            top = max(heads, key=lambda H: (counts[H], -H))
            if counts[top]:
                some.append("%s (at most %d of %d seeds, at H = %d)" % (
                    k, counts[top], len(by_h[top]), top))
            else:
                none.append(k)
        elif every == heads[heads.index(every[0]):]:
            got.append("%s from H = %d on" % (k, every[0]))
        else:
            got.append("%s at H = %s" % (k, hs(every)))
    rule = ("it attends to the relation's key above the bar, silencing it alone costs the "
            "relation at least the needed share, and it serves no other relation" if causal
            else "its attention is above the relation's bar and it serves no other relation; "
            "these reports carry no ablation per relation, so attention alone")
    s = "Relations with a head of their own in every seed (%s): %s." % (
        rule, "; ".join(got) if got else "none, at any H")
    if some:
        s += " In some seeds only: %s." % "; ".join(some)
    if none:
        s += " In no seed at any H: %s." % ", ".join(none)
    return s


def removable_sentence(by_h, layers):
    """How many heads can go one at a time: removable_heads_1pct per H."""
    parts = []
    for H in sorted(by_h):
        v = [r.get("removable_heads_1pct") for r in by_h[H]]
        m, _, n = mean_sd(v)
        if n:
            parts.append("H = %d: %s of %d" % (H, pm(v, 1), H * layers))
    if not parts:
        return ""
    return ("Heads that can go, one at a time (silencing that head alone raises the loss by "
            "under 1%%; mean ± s.d. over seeds): %s. Removing several at once was not "
            "measured." % "; ".join(parts))


def answer(sweep, rows, arms, titles, names, t_margin):
    """The short answer: per arm and depth with rows, a title and its sentences; then,
    per arm with several depths, what depth adds."""
    out = []
    for arm in arms:
        by_h = {}
        for r in rows:
            if r["arm"] == arm:
                by_h.setdefault(r["H"], []).append(r)
        if not by_h:
            continue
        said = [loss_sentence(by_h, t_margin), learned_sentence(by_h),
                compromise_sentence(by_h, t_margin), relations_sentence(by_h, names),
                removable_sentence(by_h, next(iter(by_h.values()))[0]["L"])]
        out.append((titles[arm], [s for s in said if s]))
    for base in ("width", "headsize"):
        mine = [a for a in arms if a.split("-")[0] == base]
        said = depth_sentence(rows, mine, titles)
        if said:
            out.append(("%s, across depths" % titles[mine[0]].rsplit(", L =", 1)[0], [said]))
    return out


def answer_md(answers, quick=False):
    """The short answer as markdown lines (ablation.md's first screen); a --quick
    sweep's warning in its place."""
    out = [ANSWER, ""] if not quick else [QUICK_ANSWER, "", QUICK_WARNING, "", QUICK_MEASURED,
                                          ""]
    for title, said in answers:
        out += ["**%s**" % title, ""] + ["- %s" % s for s in said] + [""]
    if not answers:
        out += ["No run has finished yet.", ""]
    return out


CSS = """body{font-family:system-ui,sans-serif;max-width:1320px;margin:1em auto;padding:0 1em;
color:#222;line-height:1.45}
.fig{max-width:100%;overflow:auto;border:1px solid #ddd;margin:.5em 0 1.5em}
.fig img{display:block;max-width:none}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;padding:2px 8px;
text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
.answer{background:#f7f9fc;border-left:4px solid #1f77b4;padding:.3em 1em}
.answer.quick{background:#fff8e6;border-left-color:#e6a100}
dl.legend dt{font-weight:bold;float:left;clear:left;margin-right:.5em}
dl.legend dd{margin:0 0 .2em 0}"""


def html_table(head, body):
    return "<table><tr>%s</tr>%s</table>" % (
        "".join("<th>%s</th>" % html.escape(h) for h in head),
        "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(c) for c in b)
                for b in body))


def run_table(rows, unit):
    """One arm's rows at one depth, per H: seeds, bits per byte, val loss in the sweep's
    unit, removable heads, the compromise's mean overlap, then each relation's
    minimal-pair accuracy; each cell mean ± s.d."""
    by_h = {}
    for r in rows:
        by_h.setdefault(r["H"], []).append(r)
    head = ["L", "H", "D", "seeds", "bits per byte", "val loss (%s)" % unit, "removable <1%",
            "overlap"]
    body = [[str(rs[0]["L"]), str(H), str(rs[0]["D"]), str(len(rs)),
             pm([r["bpb"] for r in rs], 3), pm([r["val_loss"] for r in rs], 4),
             pm([r.get("removable_heads_1pct") for r in rs], 1),
             pm([r.get("compromise_overlap") for r in rs], 2)]
            for H, rs in sorted(by_h.items())]
    out = html_table(head, body) + ablate_legend.html(head, unit, html.escape)
    rels = list(dict.fromkeys(k for r in rows for k, v in r["relations"].items()
                              if "accuracy" in v))
    if rels:
        acc = [[str(rs[0]["L"]), str(H)] + [pm([r["relations"].get(k, {}).get("accuracy")
                                               for r in rs], 2) for k in rels]
               for H, rs in sorted(by_h.items())]
        head = ["L", "H"] + ["%s acc." % k for k in rels]
        out += ("<p>Minimal-pair accuracy per relation:</p>" + html_table(head, acc) +
                ablate_legend.html(head, unit, html.escape))
    return out


def page(outdir, description, answers, rows, twins, arms, titles, unit, twins_html,
         quick=False):
    """index.html's text: the short answer (for a --quick sweep, the warning that it
    only checks the pipeline, then what its runs measured), the compare pages that exist in outdir,
    the figures that exist in outdir/plots, a table per arm, the gate and routing sweeps'
    sections (twins_html, "" without them), the links to every run's heads report
    (twins: the gated and routed runs' rows) and to the other outputs."""
    e = html.escape
    out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
           "<title>Head-count ablation</title><style>%s</style></head><body>" % CSS,
           "<h1>Head-count ablation</h1>", "<p>%s</p>" % e(description)]
    if quick:
        out.append("<section class=\"answer quick\"><h2>%s</h2><p><b>%s</b></p><p>%s</p>" % (
            e(QUICK_ANSWER[3:]), e(QUICK_WARNING), e(QUICK_MEASURED)))
    else:
        out.append("<section class=\"answer\"><h2>Short answer</h2>")
    for title, said in answers:
        out.append("<h3>%s</h3><ul>%s</ul>" % (e(title), "".join("<li>%s</li>" % e(s)
                                                                 for s in said)))
    if not answers:
        out.append("<p>No run has finished yet.</p>")
    out.append("</section>")
    def there(f):
        return os.path.exists(os.path.join(outdir, f))
    by_depth = [(DEPTH_COMPARE[0] % L, DEPTH_COMPARE[1] % L)
                for L in sorted({r["L"] for r in rows})]
    pages = [p for p in by_depth if there(p[0])] or [p for p in COMPARE[:1] if there(p[0])]
    pages += [p for p in COMPARE[1:] if there(p[0])]
    if pages:
        out.append("<h2>Compare pages</h2><ul>%s</ul>" % "".join(
            "<li><a href=\"%s\">%s</a>: %s</li>" % (e(f), e(f), e(what)) for f, what in pages))
    out.append("<h2>Figures</h2>")
    for pattern, caption in FIGURES:
        for f in ([pattern % a for a in arms] if "%s" in pattern else [pattern]):
            if os.path.exists(os.path.join(outdir, "plots", f)):
                out.append("<p>%s <a href=\"plots/%s\">plots/%s</a></p><div class=\"fig\">"
                           "<img src=\"plots/%s\" alt=\"%s\"></div>" % (
                               e(caption), e(f), e(f), e(f), e(caption)))
    out.append("<h2>Loss, removable heads, compromise and minimal pairs per L and H</h2>")
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        if mine:
            out.append("<h3>%s</h3>%s" % (e(titles[arm]), run_table(mine, unit)))
    out.append(twins_html)
    out.append("<h2>Every run's heads report</h2><ul>")
    seen = set()
    for r in sorted(rows + list(twins), key=lambda r: (r["L"], r["H"], r["D"], r.get("gate", 0),
                                                       r.get("route", 0), r["seed"])):
        if r["run"] not in seen:
            seen.add(r["run"])
            twin = ", LAMBDA = %g" % r["gate"] if r.get("gate") else ", K = %d" % r["route"] \
                if r.get("route") else ""
            out.append("<li><a href=\"%s\">%s</a>: L = %d, H = %d, D = %d, seed %d%s, %.3f "
                       "bits per byte</li>" % (e(r["heads_report"]), e(r["run"]), r["L"], r["H"],
                                               r["D"], r["seed"], twin, r["bpb"]))
    out.append("</ul><p>Tables and every sentence: <a href=\"ablation.md\">ablation.md</a>; "
               "numbers: <a href=\"ablation.csv\">ablation.csv</a>%s.</p></body></html>" % (
                   ", <a href=\"relations.csv\">relations.csv</a>" if os.path.exists(
                       os.path.join(outdir, "relations.csv")) else ""))
    return "\n".join(out) + "\n"
