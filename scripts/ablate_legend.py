"""ablate_legend: one line per column of the ablation report's tables (ablation.md and
index.html), so that a reader needs no other page to read a table.

COLUMNS maps a column's header, as the tables print it, to its legend; a header
that names a relation or a head type ("previous-token attn. (uniform 0.056)",
"previous-token", "copy loss ratio") is matched by PATTERNS. legend(head, unit)
gives a table's lines; a header with no legend is a bug of the report, and raises
KeyError so the report cannot be written without one (the routing table's too).
The gate table's own legend is ablate_gates.LEGEND. Standard library only.
"""
import re

# {unit}: the sweep's loss unit (nats per byte, or per token with --vocab).
COLUMNS = {
    "L": "layers (the depth)",
    "H": "heads per layer",
    "D": "head size",
    "H·D": "attention width, H times D",
    "params": "trainable parameters of one model",
    "seeds": "runs averaged (seeds 1..N)",
    "val loss": "mean cross-entropy over the validation split, in {unit}",
    "ppl": "perplexity, e to the val loss",
    "bpb": "validation bits per byte, the headline: comparable across vocabularies",
    "bits per byte": "validation bits per byte, the headline: comparable across vocabularies",
    "val loss ({unit})": "mean cross-entropy over the validation split",
    "tok/s": "training tokens per second (depends on the machine and --jobs)",
    "norm. entropy": "mean normalised attention entropy: 0 = one key, 1 = uniform",
    "distance": "mean attention distance, in tokens",
    "eff. heads": "effective number of distinct heads (docs/heads.md)",
    "removable <1%": "heads whose removal alone raises the loss by under 1%, of L·H",
    "max imp.": "the largest loss rise from silencing one head alone, in {unit}",
    "overlap": "the compromise measure's mean over relation pairs (docs/heads.md): 1 one "
               "head holds both keys of a row two relations share, 0 each key has heads of "
               "its own",
    "formed": "seeds in which an induction head formed, of the seeds judged",
    "phase-change step, median (range)": "the step the induction head formed, over the "
    "seeds that formed one",
    "copy loss ratio, median (range)": "loss on repeated letters over loss on first "
    "occurrences (below 0.5: the model copies)",
    "final best repeat, median (range)": "the best layer>=1 repeat score at the end",
    "relation": "the relation (docs/heads.md, Relations)",
    "arm": "width: C fixed, D = C/H; headsize: D fixed",
    "best head": "each seed's head with the most attention on the key (×n: in n seeds); "
    "none: no head above the uniform head",
    "best-head attn.": "the best head's mean attention on the relation's key",
    "uniform": "what a head spreading its weight evenly scores on the key",
    "ratio": "best-head attention over uniform",
    "bar": "the attention a head needs to attend to the relation",
    "seeds above bar": "seeds in which the relation is served, of the seeds",
    "loss ({unit})": "mean loss on the tokens the relation predicts",
    "heads (L·H)": "heads per model",
    "relations": "relations scored",
    "served, mean (range)": "relations served per run (mean, with the range over seeds)",
    "distinct heads, mean (range)": "different heads serving the served relations",
    "heads serving 2+, mean (range)": "heads that serve two or more relations",
    "accuracy": "minimal pairs: share where the right token's logit beats the wrong one's "
    "(chance 0.5)",
    "logit diff": "minimal pairs: the mean margin of the right token's logit",
    "needed head": "per seed, the head whose silencing costs the relation most",
    "seeds attending": "seeds in which some head attends above the bar",
    "seeds needing a head": "seeds in which some head is needed",
    "seeds served": "seeds in which some head attends and is needed",
    "K": "train's --head-routing: the heads of each layer a token is routed to",
    "model": "routed: the run trained with --head-routing K; plain H = K: the plain run "
    "with as many heads per token (the arm's head size); plain H = H: the routed run's "
    "twin, every head on every token; each over the seeds whose routed run finished",
}
# Headers that name a relation or a head type.
PATTERNS = [
    (r"(.+) attn\. \(uniform ([\d.]+)\)$", "{0}'s best head: mean attention on the key; a "
     "uniform head scores {1}"),
    (r"(.+) attn\.$", "{0}'s best head: mean attention on the key"),
    (r"(.+) acc\.$", "{0}: minimal-pair accuracy, mean ± s.d. over seeds (chance 0.5; "
     "learned: 0.9 or more in every seed)"),
    (r"(.+) loss ratio$", "{0}: loss on the repeat over the loss at the first occurrence"),
    (r"(.+) loss$", "{0}: mean loss on the tokens it predicts, in {unit}"),
    (r"([a-z][a-z-]*)$", "heads of the type {0} per model (docs/heads.md, Types)"),
]


def one(name, unit):
    """The legend of one header."""
    for key, text in COLUMNS.items():
        if key.format(unit=unit) == name:
            return text.format(unit=unit)
    for pattern, text in PATTERNS:
        m = re.match(pattern, name)
        if m:
            return text.format(*m.groups(), unit=unit)
    raise KeyError("no legend for the column '%s'" % name)


def legend(head, unit):
    """A table's legend as pairs (header, text), in the table's order."""
    return [(h, one(h, unit)) for h in head]


def md(head, unit):
    """The legend as markdown lines under a table."""
    return ["Columns:", ""] + ["- %s: %s." % (h, t) for h, t in legend(head, unit)] + [""]


class Once:
    """md() that gives a table's legend the first time its columns appear and, for the
    same columns again (the second arm's table), a line pointing back to it."""

    def __init__(self):
        self.seen = set()

    def md(self, head, unit):
        if tuple(head) in self.seen:
            return ["Columns: as under the first arm's table of the same columns.", ""]
        self.seen.add(tuple(head))
        return md(head, unit)


def html(head, unit, escape):
    """The legend as an HTML definition list."""
    return "<dl class=\"legend\">%s</dl>" % "".join(
        "<dt>%s</dt><dd>%s</dd>" % (escape(h), escape(t)) for h, t in legend(head, unit))
