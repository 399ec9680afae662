"""ablate_stats: the numbers-to-text helpers the scripts share (the ablation
report's modules, plot_log.py, induction_phase.py, induction_table.py): a tolerant
float, the mean and sample standard deviation over seeds, "mean ± s.d." cells and
"median (min–max)" cells, CSV text. Standard library only.
"""
import csv
import io
import math
import statistics


def num(v) -> float:
    """v as a float, from a number or the text of one (a CSV cell); NaN for None, a
    boolean, anything else, and a value that is not finite."""
    if isinstance(v, bool):
        return float("nan")
    try:
        v = float(v)
    except (TypeError, ValueError, OverflowError):
        return float("nan")
    return v if math.isfinite(v) else float("nan")


def mean_sd(values):
    """(mean, sample s.d., n) over the finite values; s.d. is NaN for one value."""
    v = [x for x in map(num, values) if math.isfinite(x)]
    if not v:
        return float("nan"), float("nan"), 0
    return statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else float("nan"), len(v)


def pm(values, digits):
    """mean ± s.d. with `digits` decimals; one value alone, and whole if it is whole."""
    m, s, n = mean_sd(values)
    if n == 0:
        return "–"
    if n == 1 or not math.isfinite(s) or s == 0:
        return "%d" % m if m == int(m) and digits <= 1 else "%.*f" % (digits, m)
    return "%.*f ± %.*f" % (digits, m, digits, s)


def spread(values, digits) -> str:
    """median (min–max) of the finite values with `digits` decimals; the value alone
    when there is one; – for none."""
    v = sorted(x for x in map(num, values) if math.isfinite(x))
    if not v:
        return "–"
    f = lambda x: "%.*f" % (digits, x)  # noqa: E731
    return f(statistics.median(v)) if len(v) == 1 else "%s (%s–%s)" % (
        f(statistics.median(v)), f(v[0]), f(v[-1]))


def csv_text(columns, records) -> str:
    """CSV text: a header of columns, then one line per record (a dict) with its
    values for them: a finite float as %.6g, an absent value or a float that is
    not finite as an empty cell."""
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(columns)
    for r in records:
        w.writerow(["%.6g" % v if isinstance(v, float) and math.isfinite(v) else
                    "" if v is None or isinstance(v, float) else v
                    for v in (r.get(c) for c in columns)])
    return f.getvalue()


def twin_groups(cmp, arms, setting):
    """A twin sweep's comparisons (gated or routed runs beside their plain runs) as
    {(arm, H, c[setting]): comparisons}, in the report's order: arms as given, then H,
    the twin's setting (LAMBDA, K) and the seed."""
    out = {}
    for c in sorted(cmp, key=lambda c: (arms.index(c["arm"]), c["H"], c[setting], c["seed"])):
        out.setdefault((c["arm"], c["H"], c[setting]), []).append(c)
    return out
