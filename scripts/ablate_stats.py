"""ablate_stats: the numbers-to-text helpers the ablation report's modules share
(ablate_report.py, ablate_relations.py): a tolerant float, the mean and sample
standard deviation over seeds, and "mean ± s.d." cells. Standard library only.
"""
import math
import statistics


def num(v):
    """v as a float; NaN for None or anything that is not a number."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


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

