#!/usr/bin/env python3
"""plot_log: draws a training run (or several) from ./train --log JSON-lines files.

  python3 scripts/plot_log.py RUN.log [RUN2.log ...] --out DIR [--labels A,B,...]

Writes into DIR, as self-contained SVG (standard library only, no fonts or
scripts), plus an index.html showing them together:

  loss.svg       train loss (each step, faint; and a moving average) and val loss
                 (each eval) against step
  lr.svg         the learning rate against step
  heads.svg      with --heads-every: previous-token (prev), repeat, normalised
                 entropy and distance against step. One log: one line per head.
                 Several logs (e.g. the head-count ablation, one run per H): one
                 line per log, for the most specialised head at each step (the
                 largest prev and repeat, the smallest entropy and distance).
  jsd.svg        with --heads-every: the mean JSD between the heads of a layer
                 against step (0 when they all attend alike, as heads from
                 --init-heads same do without noise): one thick line per log, the
                 mean over its layers, and a thin one per layer.
  relations.svg  when the heads records carry "relations" (the planted relations
                 of the built-in corpus): each relation's best-head attention
                 against step, with its uniform baseline dashed; one panel per
                 relation, one line per log.

A log without a kind of record still gets its file, with a message in place of
the lines. Each line is labelled from the run's settings (H, L, C), or --labels.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli  # noqa: E402
import runlog  # noqa: E402
from ablate_stats import num  # noqa: E402
from svgchart import PALETTE, Axes, Svg, legend, padded  # noqa: E402

QUICK = [("prev", "previous-token attention (prev)", "max"),
         ("repeat", "repeat (in-text induction)", "max"),
         ("entropy", "entropy (normalised, 1 = uniform)", "min"),
         ("distance", "mean attention distance (positions)", "min")]
FILES = ("loss.svg", "lr.svg", "heads.svg", "jsd.svg", "relations.svg", "index.html")
HEAD_FILES = ("heads.svg", "jsd.svg", "relations.svg")
MARKER = ".headcount-plots"


def load(path):
    """A run: settings, step records, eval records, heads records (runlog checks
    every line; a bad one is a cli.Error naming it)."""
    log = runlog.read(path)
    if not log.steps and not log.evals:
        raise cli.Error("%s: no step or eval records (is it a ./train --log file?)" % path)
    return {"path": path, "settings": log.settings or {}, "steps": log.steps,
            "evals": log.evals, "heads": log.heads}


def label_of(run):
    s = run["settings"]
    if "heads" in s:
        return "H=%s (L=%s, C=%s)" % (s["heads"], s.get("layers", "?"), s.get("embd", "?"))
    return os.path.basename(run["path"])


def moving_average(ys, k):
    out, acc, window = [], 0.0, []
    for y in ys:
        window.append(y)
        acc += y
        if len(window) > k:
            acc -= window.pop(0)
        out.append(acc / len(window))
    return out


def finite(vals):
    return [v for v in vals if math.isfinite(v)]


def step_range(runs):
    steps = [num(r["step"]) for run in runs for r in run["steps"] + run["evals"]]
    steps += [num(h["step"]) for run in runs for h in run["heads"]]
    steps = finite(steps) or [0.0, 1.0]
    return (min(steps), max(steps)) if max(steps) > min(steps) else (min(steps), min(steps) + 1)


def loss_unit(runs):
    """Nats per token when a run learned byte pairs (its settings record has merges or
    a --vocab), else nats per byte."""
    pairs = any(num(run["settings"].get(k)) > 0 for run in runs for k in ("merges", "vocab_asked"))
    return "nats per token" if pairs else "nats per byte"


def loss_plot(runs, labels):
    """Train and val loss against step; the axis starts at zero."""
    svg = Svg(900, 470, "Loss against step")
    ys = [num(r["loss"]) for run in runs for r in run["steps"]]
    ys += [num(e["val_loss"]) for run in runs for e in run["evals"]]
    ys = finite(ys)
    ax = Axes(svg, 80, 40, 560, 360, step_range(runs), (0.0, padded(0.0, max(ys))[1]) if ys
              else (0, 1), title="Training loss (mean cross-entropy, %s)" % loss_unit(runs),
              xlabel="step", ylabel="loss (%s)" % loss_unit(runs))
    entries = []
    for k, run in enumerate(runs):
        c = PALETTE[k % len(PALETTE)]
        xs = [num(r["step"]) for r in run["steps"]]
        raw = [num(r["loss"]) for r in run["steps"]]
        if xs:
            ax.polyline(xs, raw, c, width=0.8, opacity=0.3)
            ax.polyline(xs, moving_average(raw, max(1, len(raw) // 50)), c, width=1.8)
        ev = [e for e in run["evals"] if e.get("type") == "eval"] or run["evals"]
        ex, ey = [num(e["step"]) for e in ev], [num(e["val_loss"]) for e in ev]
        ax.polyline(ex, ey, c, width=1.6, dash="6,3")
        for x, y in zip(ex, ey):
            ax.point(x, y, c, r=3, tip="%s step %g: val %.4f" % (labels[k], x, y))
        entries.append((labels[k] + " train", c, "line"))
        entries.append((labels[k] + " val", c, "dash"))
    if not ys:
        ax.message("no loss records")
    legend(svg, 652, 40, entries)
    return svg


def lr_plot(runs, labels):
    svg = Svg(900, 400, "Learning rate against step")
    ys = finite([num(r.get("lr")) for run in runs for r in run["steps"]])
    ax = Axes(svg, 80, 40, 560, 290, step_range(runs), (0, max(ys) * 1.08) if ys else (0, 1),
              title="Learning rate (warm-up, then cosine decay)", xlabel="step",
              ylabel="learning rate")
    for k, run in enumerate(runs):
        ax.polyline([num(r["step"]) for r in run["steps"]],
                    [num(r.get("lr")) for r in run["steps"]], PALETTE[k % len(PALETTE)], width=1.8)
    if not ys:
        ax.message("no step records")
    legend(svg, 652, 40, [(labels[k], PALETTE[k % len(PALETTE)], "line") for k in range(len(runs))])
    return svg


LAYER_DASH = [None, "7,3", "2,2", "9,3,2,3"]


def head_colour(l, h, H):
    """One hue per head within a layer, darker for later layers."""
    hue = (h * 360.0 / max(H, 1)) % 360
    light = 50 - 8 * min(l, 3)
    return "hsl(%.0f, 70%%, %d%%)" % (hue, light)


def layer_dash(l):
    """Layers told apart by the stroke: solid, dashed, dotted, dash-dot."""
    return LAYER_DASH[l % len(LAYER_DASH)]


def heads_plot(runs, labels):
    single = len(runs) == 1
    svg = Svg(1080, 760, "Head metrics against step")
    steps = step_range(runs)
    entries = []
    any_heads = any(run["heads"] for run in runs)
    for p, (key, title, best) in enumerate(QUICK):
        x0, y0 = 80 + (p % 2) * 440, 50 + (p // 2) * 340
        vals = finite([num(h.get(key)) for run in runs for rec in run["heads"]
                       for h in rec.get("heads", [])])
        if key in ("prev", "repeat", "entropy"):
            ylim = (0.0, max(1.0 if key == "entropy" else 0.0, max(vals, default=1.0)) * 1.04)
        else:
            ylim = padded(min(vals), max(vals)) if vals else (0, 1)
        if not single:
            title += " (%s over heads)" % ("largest" if best == "max" else "smallest")
        ax = Axes(svg, x0, y0, 360, 250, steps, ylim, title=title, xlabel="step", ylabel=key)
        if not any_heads:
            ax.message("no heads records (train with --heads-every N)")
            continue
        for k, run in enumerate(runs):
            xs = [num(rec["step"]) for rec in run["heads"]]
            if single:
                H = int(run["settings"].get("heads", 0)) or 1 + max(
                    (h["head"] for rec in run["heads"] for h in rec["heads"]), default=0)
                ids = sorted({(h["layer"], h["head"])
                              for rec in run["heads"] for h in rec["heads"]})
                for (l, h) in ids:
                    ys = []
                    for rec in run["heads"]:
                        m = [num(x.get(key)) for x in rec["heads"]
                             if x["layer"] == l and x["head"] == h]
                        ys.append(m[0] if m else float("nan"))
                    ax.polyline(xs, ys, head_colour(l, h, H), width=1.4, dash=layer_dash(l),
                                tip="L%dH%d" % (l, h))
                    if p == 0:
                        entries.append(("L%dH%d" % (l, h), head_colour(l, h, H), layer_dash(l)))
            else:
                pick = max if best == "max" else min
                ys = [pick(finite([num(x.get(key)) for x in rec["heads"]]) or [float("nan")])
                      for rec in run["heads"]]
                ax.polyline(xs, ys, PALETTE[k % len(PALETTE)], width=1.8, tip=labels[k])
    if not single:
        legend(svg, 900, 40, [(labels[k], PALETTE[k % len(PALETTE)], "line")
                              for k in range(len(runs))])
    elif entries:
        head_legend(svg, 900, 40, entries)
    return svg


def head_legend(svg, x, y, entries):
    """entries: (label, colour, dash); a key per head with its layer's stroke. Past
    32 heads the rest are summarised (the lines' tooltips name them)."""
    more = len(entries) - 32
    if more > 0:
        entries = entries[:31]
    rows = len(entries) + (1 if more > 0 else 0)
    svg.h = max(svg.h, y + 8 + 18 * rows + 10)
    svg.rect(x, y, 110, 8 + 18 * rows, "#fff", stroke="#bbb", opacity=0.92)
    cy = y + 17
    for label, colour, dash in entries:
        svg.line(x + 8, cy - 4, x + 34, cy - 4, stroke=colour, width=2.0, dash=dash)
        svg.text(x + 40, cy, label, size=11)
        cy += 18
    if more > 0:
        svg.text(x + 8, cy, "+%d more heads" % (more + 1), size=11, fill="#555")


def jsd_plot(runs, labels):
    svg = Svg(900, 470, "JSD within a layer against step")
    ys = finite([num(v) for run in runs for h in run["heads"] for v in h.get("jsd_within_layer", [])])
    ax = Axes(svg, 80, 40, 560, 360, step_range(runs), (0, max(max(ys) * 1.08, 0.05)) if ys
              else (0, 1), title="Mean JSD between the heads of a layer (nats; ln 2 = 0.693 at most)",
              xlabel="step", ylabel="JSD within a layer")
    for k, run in enumerate(runs):
        c = PALETTE[k % len(PALETTE)]
        recs = [h for h in run["heads"] if h.get("jsd_within_layer")]
        xs = [num(h["step"]) for h in recs]
        layers = [[num(v) for v in h["jsd_within_layer"]] for h in recs]
        for l in range(min(len(v) for v in layers) if layers else 0):
            ax.polyline(xs, [v[l] for v in layers], c, width=0.8, opacity=0.45,
                        dash=LAYER_DASH[l % len(LAYER_DASH)])
        ax.polyline(xs, [sum(v) / len(v) for v in layers], c, width=2.2,
                    tip="%s: mean over layers" % labels[k])
    if not ys:
        ax.message("no JSD within layers (train with --heads-every N)")
    legend(svg, 652, 40, [(labels[k], PALETTE[k % len(PALETTE)], "line") for k in range(len(runs))],
           title="thick: mean of the layers")
    return svg


def relations_plot(runs, labels):
    """Each relation's best-head attention per step; None when no log has any."""
    names = []
    for run in runs:
        for rec in run["heads"]:
            for n in (rec.get("relations") or {}):
                if n not in names:
                    names.append(n)
    svg = Svg(1080, 60 + 330 * ((max(len(names), 1) + 1) // 2), "Planted relations against step")
    if not names:
        ax = Axes(svg, 80, 50, 360, 250, (0, 1), (0, 1), title="Planted relations")
        ax.message("no relation scores in the heads records")
        return svg
    steps = step_range(runs)
    for p, name in enumerate(names):
        x0, y0 = 80 + (p % 2) * 440, 50 + (p // 2) * 330
        vals = finite([num((rec.get("relations") or {}).get(name, {}).get(f))
                       for run in runs for rec in run["heads"] for f in ("attention", "uniform")
                       if ((rec.get("relations") or {}).get(name) or {}).get("best_head")])
        ax = Axes(svg, x0, y0, 360, 240, steps, (0.0, max(vals + [0.1]) * 1.08),
                  title="%s: attention of the best head" % name, xlabel="step",
                  ylabel="attention on the related key")
        for k, run in enumerate(runs):
            c = PALETTE[k % len(PALETTE)]
            # A batch with no row of the relation has best_head null: no point there.
            recs = [rec for rec in run["heads"]
                    if ((rec.get("relations") or {}).get(name) or {}).get("best_head")]
            xs = [num(rec["step"]) for rec in recs]
            r = [rec["relations"][name] for rec in recs]
            ax.polyline(xs, [num(x.get("attention")) for x in r], c, width=1.8,
                        tip="%s: %s" % (labels[k], name))
            ax.polyline(xs, [num(x.get("uniform")) for x in r], c, width=1.0, dash="4,3")
            for x, rr in zip(xs, r):
                ax.point(x, num(rr.get("attention")), c, r=2.5,
                         tip="%s step %g: %s %.3f" % (labels[k], x, rr.get("best_head", "?"),
                                                      num(rr.get("attention"))))
    entries = [(labels[k], PALETTE[k % len(PALETTE)], "line") for k in range(len(runs))]
    entries.append(("uniform baseline", "#555", "dash"))
    legend(svg, 900, 40, entries)
    return svg


def index_html(runs, labels, files):
    out = ["<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<title>headcount run plots</title><style>body{font-family:sans-serif;margin:16px;"
           "color:#222}img{display:block;margin:10px 0;max-width:100%}</style></head><body>\n"
           "<h1>Run plots</h1>\n<ul>\n"]
    for run, lab in zip(runs, labels):
        out.append("<li>%s: %s</li>\n" % (escape(lab), escape(run["path"])))
    out.append("</ul>\n")
    for name in files:
        out.append("<img src=\"%s\" alt=\"%s\">\n" % (name, name))
    if not any(name in HEAD_FILES for name in files):
        out.append("<p id=\"no-heads\">No head charts: the log%s no head records. Train with "
                   "<code>--heads-every N</code> for every head's metrics and the planted "
                   "relations against step.</p>\n" % (" has" if len(runs) == 1 else "s have"))
    out.append("</body></html>\n")
    return "".join(out)


def escape(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main(argv):
    ap = cli.Parser(prog="plot_log.py", description="Draw SVG plots from ./train --log files.")
    ap.add_argument("logs", nargs="+", help="JSON-lines logs written by ./train --log")
    ap.add_argument("--out", required=True,
                    help="directory for the SVG files: new, empty, or this script's own "
                    "earlier output (marked by %s)" % MARKER)
    ap.add_argument("--labels", help="comma-separated line labels, one per log")
    a = ap.parse_args(argv)
    out = cli.OutputDir(a.out, "--out", FILES, MARKER,
                        "plots by scripts/plot_log.py; it may replace this directory\n")
    out.check()
    runs = [load(p) for p in a.logs]
    labels = [label_of(r) for r in runs]
    if a.labels:
        given = a.labels.split(",")
        if len(given) != len(runs):
            ap.error("--labels has %d names for %d logs" % (len(given), len(runs)))
        labels = given
    files = []
    # The head charts only where a log has head records (--heads-every): else the
    # page says how to get them, rather than showing empty charts.
    heads = any(run["heads"] for run in runs)
    with out:
        for name, draw in (("loss.svg", loss_plot), ("lr.svg", lr_plot),
                           ("heads.svg", heads_plot), ("jsd.svg", jsd_plot),
                           ("relations.svg", relations_plot)):
            if name in HEAD_FILES and not heads:
                continue
            out.write(name, draw(runs, labels).render())
            files.append(name)
        out.write("index.html", index_html(runs, labels, files))
    print("plot_log: wrote %s to %s" % (", ".join(files + ["index.html"]), a.out))


if __name__ == "__main__":
    cli.run("plot_log", main)
