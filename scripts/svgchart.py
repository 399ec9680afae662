"""svgchart: the few chart primitives the Python plots need (plot_log.py, ablate_report.py).

Writes self-contained SVG text (no scripts, no external fonts or images) with the
standard library only: a canvas, axes with linear scales and "nice" ticks, lines,
markers, error bars, rectangles, a legend, and heatmaps with a colour scale. What
to plot, and from which numbers, is decided by the callers; this file knows nothing
about runs.
"""
import math
from xml.sax.saxutils import escape

# Colour-blind-friendly enough for 4 to 8 series (matplotlib's tab10 order).
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
           "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]


def fmt(v):
    """A tick or value label: at most 4 significant digits, no trailing zeros."""
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        return "%.2g" % v
    s = "%.4g" % v
    return s.rstrip("0").rstrip(".") if "." in s and "e" not in s else s


def nice_ticks(lo, hi, n=5):
    """Round tick values covering [lo, hi], about n of them (1-2-2.5-5 steps)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) * 0.1 or 1.0)
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * 0.999)
    first = math.ceil(lo / step - 1e-9) * step
    ticks, t = [], first
    while t <= hi + step * 1e-6:
        ticks.append(0.0 if abs(t) < step * 1e-9 else t)
        t = first + len(ticks) * step
    return ticks


def padded(lo, hi, frac=0.06):
    """[lo, hi] widened by frac of its span on both sides (a flat range gets room)."""
    if hi <= lo:
        pad = abs(lo) * 0.05 or 0.5
        return lo - pad, hi + pad
    pad = (hi - lo) * frac
    return lo - pad, hi + pad


class Svg:
    """An SVG document built from string parts; render() gives the whole file."""

    def __init__(self, width, height, title):
        self.w, self.h, self.title = width, height, title
        self.parts = []
        self._ids = 0

    def new_id(self, stem):
        self._ids += 1
        return "%s%d" % (stem, self._ids)

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, size=12, anchor="start", fill="#222", weight=None, rotate=False):
        extra = ' font-weight="%s"' % weight if weight else ""
        if rotate:
            extra += ' transform="rotate(-90 %.1f %.1f)"' % (x, y)
        self.add('<text x="%.1f" y="%.1f" font-size="%g" text-anchor="%s" fill="%s"%s>%s</text>'
                 % (x, y, size, anchor, fill, extra, escape(str(s))))

    def line(self, x1, y1, x2, y2, stroke="#222", width=1.0, dash=None, opacity=1.0):
        d = ' stroke-dasharray="%s"' % dash if dash else ""
        o = ' stroke-opacity="%g"' % opacity if opacity < 1 else ""
        self.add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s%s/>'
                 % (x1, y1, x2, y2, stroke, width, d, o))

    def rect(self, x, y, w, h, fill, stroke=None, opacity=1.0, tip=None):
        s = ' stroke="%s"' % stroke if stroke else ""
        o = ' fill-opacity="%g"' % opacity if opacity < 1 else ""
        body = "<title>%s</title>" % escape(tip) if tip else ""
        self.add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s%s>%s</rect>'
                 % (x, y, max(w, 0), max(h, 0), fill, s, o, body))

    def circle(self, x, y, r, fill, stroke=None, opacity=1.0, tip=None):
        s = ' stroke="%s" stroke-width="1"' % stroke if stroke else ""
        o = ' fill-opacity="%g"' % opacity if opacity < 1 else ""
        body = "<title>%s</title>" % escape(tip) if tip else ""
        self.add('<circle cx="%.1f" cy="%.1f" r="%g" fill="%s"%s%s>%s</circle>'
                 % (x, y, r, fill, s, o, body))

    def render(self):
        head = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
                'viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n'
                '<title>%s</title>\n<rect width="100%%" height="100%%" fill="#fff"/>\n'
                % (self.w, self.h, self.w, self.h, escape(self.title)))
        return head + "\n".join(self.parts) + "\n</svg>\n"


class Axes:
    """A plotting area at (x, y, w, h) on an Svg with linear scales.

    xticks/yticks: lists of (value, label); None picks nice ticks. Everything drawn
    through the axes is clipped to its area."""

    def __init__(self, svg, x, y, w, h, xlim, ylim, title="", xlabel="", ylabel="",
                 xticks=None, yticks=None):
        self.svg, self.x, self.y, self.w, self.h = svg, x, y, w, h
        self.xlim, self.ylim = xlim, ylim
        self.clip = svg.new_id("clip")
        svg.add('<clipPath id="%s"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>'
                % (self.clip, x, y, w, h))
        if yticks is None:
            yticks = [(t, fmt(t)) for t in nice_ticks(*ylim) if ylim[0] <= t <= ylim[1]]
        if xticks is None:
            xticks = [(t, fmt(t)) for t in nice_ticks(*xlim) if xlim[0] <= t <= xlim[1]]
        svg.rect(x, y, w, h, "#fafafa", stroke="#999")
        for v, label in yticks:
            py = self.sy(v)
            svg.line(x, py, x + w, py, stroke="#e2e2e2")
            svg.line(x - 4, py, x, py, stroke="#555")
            svg.text(x - 7, py + 4, label, size=11, anchor="end", fill="#444")
        for v, label in xticks:
            px = self.sx(v)
            svg.line(px, y + h, px, y + h + 4, stroke="#555")
            svg.text(px, y + h + 17, label, size=11, anchor="middle", fill="#444")
        if title:
            svg.text(x + w / 2, y - 10, title, size=13, anchor="middle", weight="bold")
        if xlabel:
            svg.text(x + w / 2, y + h + 36, xlabel, size=12, anchor="middle")
        if ylabel:
            svg.text(x - 48, y + h / 2, ylabel, size=12, anchor="middle", rotate=True)

    def sx(self, v):
        lo, hi = self.xlim
        return self.x + (v - lo) / (hi - lo) * self.w

    def sy(self, v):
        lo, hi = self.ylim
        return self.y + self.h - (v - lo) / (hi - lo) * self.h

    def polyline(self, xs, ys, color, width=1.6, dash=None, opacity=1.0, tip=None):
        pts = " ".join("%.1f,%.1f" % (self.sx(a), self.sy(b))
                       for a, b in zip(xs, ys) if math.isfinite(a) and math.isfinite(b))
        if not pts:
            return
        d = ' stroke-dasharray="%s"' % dash if dash else ""
        o = ' stroke-opacity="%g"' % opacity if opacity < 1 else ""
        body = "<title>%s</title>" % escape(tip) if tip else ""
        self.svg.add('<polyline clip-path="url(#%s)" fill="none" stroke="%s" stroke-width="%g" '
                     'stroke-linejoin="round" points="%s"%s%s>%s</polyline>'
                     % (self.clip, color, width, pts, d, o, body))

    def point(self, xv, yv, color, r=3.5, opacity=1.0, stroke=None, tip=None):
        if math.isfinite(xv) and math.isfinite(yv) and self.ylim[0] <= yv <= self.ylim[1]:
            self.svg.circle(self.sx(xv), self.sy(yv), r, color, stroke=stroke, opacity=opacity,
                            tip=tip)

    def errorbar(self, xv, yv, err, color):
        if not (math.isfinite(err) and err > 0):
            return
        px, top, bot = self.sx(xv), self.sy(yv + err), self.sy(yv - err)
        self.svg.line(px, top, px, bot, stroke=color, width=1.5)
        self.svg.line(px - 5, top, px + 5, top, stroke=color, width=1.5)
        self.svg.line(px - 5, bot, px + 5, bot, stroke=color, width=1.5)

    def hline(self, yv, color="#888", dash="5,4", label=None):
        if self.ylim[0] <= yv <= self.ylim[1]:
            py = self.sy(yv)
            self.svg.line(self.x, py, self.x + self.w, py, stroke=color, dash=dash)
            if label:
                self.svg.text(self.x + self.w - 4, py - 4, label, size=10, anchor="end", fill=color)

    def bar(self, xv, width, y0, y1, color, tip=None):
        """A rectangle from y0 to y1 centred on xv, width in data units."""
        left, right = self.sx(xv - width / 2), self.sx(xv + width / 2)
        top, bot = self.sy(max(y0, y1)), self.sy(min(y0, y1))
        self.svg.rect(left, top, right - left, bot - top, color, stroke="#fff", tip=tip)

    def message(self, s):
        self.svg.text(self.x + self.w / 2, self.y + self.h / 2, s, size=13, anchor="middle",
                      fill="#777")


def legend(svg, x, y, entries, title=None):
    """entries: (label, colour, kind) with kind 'line', 'dot', 'box' or 'dash'."""
    rows = len(entries) + (1 if title else 0)
    width = 34 + 7.2 * max([len(str(e[0])) for e in entries] + [len(title or "") - 3])
    svg.rect(x, y, width, 8 + 18 * rows, "#fff", stroke="#bbb", opacity=0.92)
    cy = y + 17
    if title:
        svg.text(x + 8, cy, title, size=11, weight="bold")
        cy += 18
    for label, color, kind in entries:
        if kind in ("line", "dash"):
            svg.line(x + 8, cy - 4, x + 26, cy - 4, stroke=color, width=2.2,
                     dash="5,3" if kind == "dash" else None)
        elif kind == "dot":
            svg.circle(x + 17, cy - 4, 4, color)
        else:
            svg.rect(x + 10, cy - 10, 13, 11, color)
        svg.text(x + 32, cy, label, size=11)
        cy += 18


# The heatmap ramp: white at the scale's low end to dark blue at its high end.
RAMP_LOW, RAMP_HIGH = (255, 255, 255), (8, 48, 107)


def ramp(v, vmin, vmax):
    """The ramp's colour for v on [vmin, vmax] (clamped), as #rrggbb."""
    t = 0.0 if vmax <= vmin else min(max((v - vmin) / (vmax - vmin), 0.0), 1.0)
    return "#%02x%02x%02x" % tuple(round(a + (b - a) * t) for a, b in zip(RAMP_LOW, RAMP_HIGH))


def heatmap(svg, x, y, values, row_labels, col_labels, cell_w, cell_h, vmin=0.0, vmax=1.0,
            marks=None, title="", show_values=None, tips=None):
    """A matrix of cells with its top-left corner at (x, y): values[i][j] (NaN: a grey
    cell) coloured by ramp(), row labels to the left, column labels above, rotated.
    marks[i][j] true outlines the cell. show_values writes each value in its cell
    (None: when the cells are tall and wide enough to read). tips[i][j]: hover text."""
    if show_values is None:
        show_values = cell_h >= 14 and cell_w >= 30
    if title:
        svg.text(x + cell_w * len(col_labels) / 2, y - 50, title, size=13, anchor="middle",
                 weight="bold")
    # Column labels upright, on two staggered lines (even columns on the upper one, with
    # a tick down to their column), so a label may be two cells wide; no rotated text,
    # which some rasterisers drop.
    for j, label in enumerate(col_labels):
        cx, ly = x + (j + 0.5) * cell_w, y - (30 if j % 2 == 0 else 10)
        if j % 2 == 0:
            svg.line(cx, ly + 4, cx, y - 2, stroke="#999")
        svg.text(cx, ly, label, size=10, anchor="middle")
    size = min(11, max(7, cell_h - 3))
    for i, row in enumerate(values):
        cy = y + i * cell_h
        svg.text(x - 5, cy + cell_h / 2 + size / 3, row_labels[i], size=size, anchor="end",
                 fill="#444")
        for j, v in enumerate(row):
            ok = isinstance(v, (int, float)) and math.isfinite(v)
            tip = tips[i][j] if tips else "%s, %s: %s" % (row_labels[i], col_labels[j],
                                                          fmt(v) if ok else "no score")
            svg.rect(x + j * cell_w, cy, cell_w, cell_h, ramp(v, vmin, vmax) if ok else "#ddd",
                     stroke="#fff", tip=tip)
            if marks and marks[i][j]:
                svg.add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" '
                        'stroke="#000" stroke-width="2"/>' % (x + j * cell_w + 1, cy + 1,
                                                              cell_w - 2, cell_h - 2))
            if show_values:
                dark = ok and (v - vmin) > 0.55 * (vmax - vmin)
                svg.text(x + (j + 0.5) * cell_w, cy + cell_h / 2 + size / 3,
                         "%.2f" % v if ok else "–", size=size, anchor="middle",
                         fill="#fff" if dark else "#222")


def colour_scale(svg, x, y, w, h, vmin, vmax, label="", steps=40):
    """A vertical legend for ramp(): vmin at the bottom, vmax at the top, with ticks."""
    for k in range(steps):
        v = vmin + (vmax - vmin) * (k + 0.5) / steps
        svg.rect(x, y + h - (k + 1) * h / steps, w, h / steps + 0.5, ramp(v, vmin, vmax))
    svg.rect(x, y, w, h, "none", stroke="#999")
    for t in nice_ticks(vmin, vmax, 4):
        if vmin <= t <= vmax:
            py = y + h - (t - vmin) / (vmax - vmin) * h
            svg.line(x + w, py, x + w + 4, py, stroke="#555")
            svg.text(x + w + 7, py + 4, fmt(t), size=11, fill="#444")
    if label:
        svg.text(x + w / 2, y - 10, label, size=11, anchor="middle")
