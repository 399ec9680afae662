"""ablate_plots: the four figures of the head-count ablation report, as SVG files.

  val_loss.svg      val loss vs H, mean ± 1 s.d. over seeds, one line per arm
  curves_ARM.svg    every run's learning curve: smoothed train loss, eval val points
  head_types.svg    share of each head type per H (stacked bars), one panel per arm
  importance.svg    each head's importance (loss increase when removed alone) per H

The numbers come from ablate_report.py (table rows and loaded runs); the drawing
primitives from ablate_svg.py. A figure with nothing to show still gets written,
with a message in place of the data, so links never break.
"""
import math
import os
import statistics

from ablate_svg import PALETTE, Axes, Svg, legend, nice_ticks, padded

ARM_COLORS = {"width": "#1f77b4", "headsize": "#d62728"}
ARM_LABELS = {"width": "fixed width (D = C/H)", "headsize": "fixed head size"}
# The colours ./infer --heads uses for its types (report.c), so pages agree.
TYPE_COLORS = {"induction": "#d62728", "previous-token": "#1f77b4", "first-position": "#7f7f7f",
               "delimiter": "#9467bd", "local": "#2ca02c", "broad": "#ff7f0e",
               "mixed": "#8c564b", "masked": "#bbbbbb"}
TYPES = ["previous-token", "local", "induction", "first-position", "delimiter", "broad",
         "mixed", "masked"]


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _save(plotdir, name, svg):
    path = os.path.join(plotdir, name)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(svg.render())
    os.replace(path + ".tmp", path)


def _arms(rows):
    seen = []
    for r in rows:
        if r["arm"] not in seen:
            seen.append(r["arm"])
    return seen


def val_loss_plot(rows, sweep):
    svg = Svg(760, 470, "Validation loss vs number of heads")
    heads = sorted({r["H"] for r in rows}) or [1]
    xs = {H: math.log2(H) for H in heads}
    vals = [_num(r["val_loss"]) for r in rows if math.isfinite(_num(r["val_loss"]))]
    span = list(vals)
    for arm in _arms(rows):      # room for the error bars too
        for H in heads:
            v = [_num(r["val_loss"]) for r in rows if r["arm"] == arm and r["H"] == H]
            v = [x for x in v if math.isfinite(x)]
            if len(v) > 1:
                m, sd = statistics.fmean(v), statistics.stdev(v)
                span += [m - sd, m + sd]
    ylim = padded(min(span), max(span), 0.08) if vals else (0.0, 1.0)
    xlim = padded(min(xs.values()), max(xs.values()), 0.08)
    if xlim[1] - xlim[0] < 1:
        xlim = (xlim[0] - 0.5, xlim[1] + 0.5)
    n_seeds = len(sweep["seeds"])
    ax = Axes(svg, 80, 50, 630, 340, xlim, ylim,
              title="Validation loss vs heads per layer (mean ± 1 s.d. over %d seed%s)"
              % (n_seeds, "s" if n_seeds != 1 else ""),
              xlabel="heads per layer H (log scale)", ylabel="val loss (nats per byte)",
              xticks=[(xs[H], str(H)) for H in heads])
    if not vals:
        ax.message("no finished runs yet")
    entries = []
    for k, arm in enumerate(_arms(rows)):
        color, shift = ARM_COLORS.get(arm, PALETTE[k]), (k - 0.5) * 0.05
        pts = []
        for H in heads:
            v = [_num(r["val_loss"]) for r in rows if r["arm"] == arm and r["H"] == H]
            v = [x for x in v if math.isfinite(x)]
            if not v:
                continue
            m = statistics.fmean(v)
            sd = statistics.stdev(v) if len(v) > 1 else float("nan")
            for x in v:
                ax.point(xs[H] + shift, x, color, r=2.5, opacity=0.35)
            ax.errorbar(xs[H] + shift, m, sd, color)
            pts.append((xs[H] + shift, m, H, sd, len(v)))
        ax.polyline([p[0] for p in pts], [p[1] for p in pts], color, width=2)
        for x, m, H, sd, n in pts:
            ax.point(x, m, color, r=4.5, stroke="#fff",
                     tip="%s H=%d: %.4f ± %.4f (n=%d)" % (arm, H, m, sd, n))
        entries.append((ARM_LABELS.get(arm, arm), color, "line"))
    entries.append(("single seed", "#999", "dot"))
    legend(svg, 500, 60, entries)
    svg.text(80, 455, "Error bars: ±1 sample s.d. over seeds (none with one seed); faint dots: "
             "individual seeds. Lower is better.", size=11, fill="#555")
    return svg


def _smooth(steps, losses, points=400):
    """Bias-corrected exponential moving average (span about 1/40 of the run),
    thinned to at most `points` points."""
    span = max(1.0, len(losses) / 40.0)
    a, avg, out = 2.0 / (span + 1.0), 0.0, []
    for i, v in enumerate(losses):
        avg = (1 - a) * avg + a * v
        out.append(avg / (1 - (1 - a) ** (i + 1)))
    stride = max(1, len(steps) // points)
    keep = list(range(0, len(steps), stride))
    if keep and keep[-1] != len(steps) - 1:
        keep.append(len(steps) - 1)
    return [steps[i] for i in keep], [out[i] for i in keep]


def curves_plot(arm, rows, runs):
    svg = Svg(820, 520, "Learning curves, arm %s" % arm)
    mine = [r for r in rows if r["arm"] == arm]
    heads = sorted({r["H"] for r in mine})
    color = {H: PALETTE[i % len(PALETTE)] for i, H in enumerate(heads)}
    curves, ys, xmax = [], [], 1
    for r in mine:
        log = runs[r["run"]]["log"]
        st = [s["step"] for s in log["steps"]]
        sx, sy = _smooth(st, [s["loss"] for s in log["steps"]]) if st else ([], [])
        ev = [(e["step"], e["val_loss"]) for e in log["evals"] if "val_loss" in e]
        curves.append((r, sx, sy, ev))
        if st:
            xmax = max(xmax, st[-1])
            ys += [y for x, y in zip(sx, sy) if x >= 0.1 * st[-1]]
        ys += [v for s, v in ev if s >= 0.1 * xmax]
    ylim = padded(min(ys), max(ys), 0.05) if ys else (0.0, 1.0)
    ax = Axes(svg, 80, 50, 560, 380, (0, xmax), ylim,
              title="Learning curves: %s" % ARM_LABELS.get(arm, arm), xlabel="optimizer step",
              ylabel="loss (nats per byte)")
    if not curves:
        ax.message("no finished runs yet")
    dashes = [None, "6,3", "2,2", "8,3,2,3"]
    for r, sx, sy, ev in curves:
        c = color[r["H"]]
        tip = "%s: H=%d D=%d seed %s" % (r["run"], r["H"], r["D"], r["seed"])
        ax.polyline(sx, sy, c, width=1.4, opacity=0.85, tip=tip,
                    dash=dashes[(int(r["seed"]) - 1) % len(dashes)])
        for s, v in ev:
            ax.point(s, v, c, r=3.2, stroke="#fff", tip="%s, step %d: val %.4f" % (tip, s, v))
    entries = [("H=%d (D=%d)" % (H, next(r["D"] for r in mine if r["H"] == H)), color[H], "line")
               for H in heads]
    seeds = sorted({int(r["seed"]) for r in mine})
    entries += [("seed %d" % s, "#555", "dash" if (s - 1) % len(dashes) else "line")
                for s in seeds[:4]]
    entries.append(("val loss at eval", "#555", "dot"))
    legend(svg, 655, 50, entries)
    svg.text(80, 492, "Lines: train loss per step, exponential moving average (span 1/40 of "
             "the run); dots: val loss at each evaluation.", size=11, fill="#555")
    svg.text(80, 508, "The y range fits the last 90% of training, so the first steps may be "
             "cut off.", size=11, fill="#555")
    return svg


def _panels(arms, width, top=50, height=330, left=80, gap=90):
    w = (width - left - 30 - gap * (len(arms) - 1)) / max(len(arms), 1)
    return [(left + i * (w + gap), top, w, height) for i in range(len(arms))]


def types_plot(rows):
    arms = _arms(rows) or ["width"]
    svg = Svg(max(520, 430 * len(arms)) + 170, 470, "Head types per H")
    panels = _panels(arms, svg.w - 170)
    any_data = False
    for arm, (x, y, w, h) in zip(arms, panels):
        heads = sorted({r["H"] for r in rows if r["arm"] == arm})
        ax = Axes(svg, x, y, w, h, (-0.6, max(len(heads), 1) - 0.4), (0, 1.08),
                  title=ARM_LABELS.get(arm, arm), xlabel="heads per layer H",
                  ylabel="share of heads" if arm == arms[0] else "",
                  xticks=[(i, str(H)) for i, H in enumerate(heads)],
                  yticks=[(t, "%d%%" % round(t * 100)) for t in (0, 0.25, 0.5, 0.75, 1.0)])
        for i, H in enumerate(heads):
            ok = [r for r in rows if r["arm"] == arm and r["H"] == H and r["heads_status"] == "ok"]
            if not ok:
                svg.text(ax.sx(i), ax.sy(0.5), "n/a", size=11, anchor="middle", fill="#999")
                continue
            any_data = True
            counts = {t: statistics.fmean(_num(r["n_" + t.replace("-", "_")]) for r in ok)
                      for t in TYPES}
            total = sum(counts.values()) or 1.0
            y0 = 0.0
            for t in TYPES:
                share = counts[t] / total
                if share > 0:
                    ax.bar(i, 0.6, y0, y0 + share, TYPE_COLORS[t],
                           tip="H=%d %s: %.1f of %.0f heads" % (H, t, counts[t], total))
                    y0 += share
            svg.text(ax.sx(i), ax.sy(1.0) - 5, "%.0f heads" % total, size=10, anchor="middle")
    if not any_data:
        svg.text(svg.w / 2, 440, "No heads analysis yet (./infer --heads unavailable or no "
                 "validation file).", size=12, anchor="middle", fill="#777")
    else:
        svg.text(80, 450, "Mean over seeds of each type's count, as a share of the L·H heads "
                 "(types from ./infer --heads).", size=11, fill="#555")
    legend(svg, svg.w - 160, 50, [(t, TYPE_COLORS[t], "box") for t in TYPES], title="head type")
    return svg


def importance_plot(rows, runs):
    arms = _arms(rows) or ["width"]
    svg = Svg(max(520, 430 * len(arms)) + 170, 480, "Head importance per H")
    panels = _panels(arms, svg.w - 170)
    vals = [v for r in rows for v, _ in runs[r["run"]]["importance"]]
    ylim = padded(min(vals + [0.0]), max(vals + [1.2]), 0.06)
    for arm, (x, y, w, h) in zip(arms, panels):
        heads = sorted({r["H"] for r in rows if r["arm"] == arm})
        ax = Axes(svg, x, y, w, h, (-0.6, max(len(heads), 1) - 0.4), ylim,
                  title=ARM_LABELS.get(arm, arm), xlabel="heads per layer H",
                  ylabel="loss increase when removed (% of base)" if arm == arms[0] else "",
                  xticks=[(i, str(H)) for i, H in enumerate(heads)],
                  yticks=[(t, "%g%%" % t) for t in nice_ticks(*ylim) if ylim[0] <= t <= ylim[1]])
        ax.hline(1.0, label="1%: removable below")
        for i, H in enumerate(heads):
            pts = [(v, t, r["seed"]) for r in rows if r["arm"] == arm and r["H"] == H
                   for v, t in runs[r["run"]]["importance"]]
            if not pts:
                svg.text(ax.sx(i), ax.sy(sum(ylim) / 2), "n/a", size=11, anchor="middle",
                         fill="#999")
                continue
            for k, (v, t, seed) in enumerate(pts):
                jitter = ((k * 0.6180339887) % 1.0 - 0.5) * 0.5
                ax.point(i + jitter, v, TYPE_COLORS.get(t, "#444"), r=3, opacity=0.8,
                         tip="H=%d seed %s, %s head: %.2f%%" % (H, seed, t or "?", v))
            med = statistics.median(v for v, _, _ in pts)
            svg.line(ax.sx(i - 0.3), ax.sy(med), ax.sx(i + 0.3), ax.sy(med), stroke="#000",
                     width=2)
    if not vals:
        svg.text(svg.w / 2, 450, "No per-head importance yet (./infer --heads unavailable or no "
                 "validation file).", size=12, anchor="middle", fill="#777")
    else:
        svg.text(80, 460, "One dot per head (all seeds), coloured by type; black bar: median. "
                 "Importance = val loss with the head silenced minus the base loss.", size=11,
                 fill="#555")
    legend(svg, svg.w - 160, 50, [(t, TYPE_COLORS[t], "dot") for t in TYPES] +
           [("median", "#000", "line")], title="head type")
    return svg


def write_plots(plotdir, sweep, rows, runs):
    """Writes every figure; returns [(path relative to the sweep dir, caption)]."""
    os.makedirs(plotdir, exist_ok=True)
    out = []
    _save(plotdir, "val_loss.svg", val_loss_plot(rows, sweep))
    out.append(("plots/val_loss.svg", "Validation loss vs H, one line per arm"))
    for arm in _arms(rows) or []:
        name = "curves_%s.svg" % arm
        _save(plotdir, name, curves_plot(arm, rows, runs))
        out.append(("plots/" + name, "Learning curves, arm %s" % ARM_LABELS.get(arm, arm)))
    _save(plotdir, "head_types.svg", types_plot(rows))
    out.append(("plots/head_types.svg", "Head-type composition per H"))
    _save(plotdir, "importance.svg", importance_plot(rows, runs))
    out.append(("plots/importance.svg", "Per-head importance distribution per H"))
    return out
