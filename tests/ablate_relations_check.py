"""Known-answer tests of scripts/ablate_relations.py, the ablation report's "one head
against several" section, and of the heatmap it draws with scripts/svgchart.py.

Hand-made summary.json relations and heads.csv rows with served relations, distinct
and shared heads worked out by hand, first for one run (judge), then for a whole fake
sweep directory (one layer, fixed width C = 4, H = 1 and 2, two seeds) through
ablate_report.write_all and check: its tables, sentences, relations.csv and SVG.
Run by tests/test_ablate_relations.c (make test): python3 tests/ablate_relations_check.py
Standard library only.
"""
import csv
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import ablate  # noqa: E402
import ablate_legend  # noqa: E402
import ablate_page  # noqa: E402
import ablate_relations  # noqa: E402
import ablate_report  # noqa: E402
import checkpoint  # noqa: E402
import cli  # noqa: E402
import svgchart  # noqa: E402

HEAD_FIELDS = ["layer", "head", "type", "masked", "prev", "bracket", "foo", "qux"]


def head(layer, h, prev, bracket, foo, qux, masked=0):
    return {"layer": str(layer), "head": str(h), "type": "mixed", "masked": str(masked),
            "prev": str(prev), "bracket": str(bracket), "foo": str(foo), "qux": str(qux)}


def rel(best, attention, uniform, loss, bar=0.3):
    """One relation of a summary.json; bar as ./infer gives it (0.30 for most)."""
    return {"best_head": best, "attention": attention, "uniform": uniform, "loss": loss,
            "rows": 100, "bar": bar}


class Judge(unittest.TestCase):
    """One run, two heads, three relations."""

    # L0H0 attends to the previous token (prev 0.62 >= 0.50) and to bracket openers
    # (0.35 >= 0.30); L0H1 to bracket openers (0.31) and to foo's key (0.25 >= foo's
    # own bar 0.20). Served: all three. Serving heads: previous-token {L0H0}, bracket
    # {L0H0, L0H1}, foo {L0H1}: 2 distinct heads, both serving two relations.
    heads = [head(0, 0, 0.62, 0.35, 0.05, 0), head(0, 1, 0.10, 0.31, 0.25, 0)]
    relations = {"previous-token": rel("L0H0", 0.60, 0.05, 2.0, bar=0.5),
                 "bracket": rel("L0H0", 0.35, 0.05, 4.0),
                 "foo": rel("L0H1", 0.25, 0.10, 3.0, bar=0.2)}
    names = ["previous-token", "bracket", "foo"]

    def test_served_relations_distinct_and_shared_heads(self):
        j = ablate_relations.judge(self.relations, self.heads, self.names)
        self.assertEqual((j["scored"], j["served"], j["distinct_heads"], j["shared_heads"]),
                         (3, 3, 2, 2))
        r = j["relations"]
        self.assertEqual(r["previous-token"]["heads"], ["L0H0"])
        self.assertEqual(r["bracket"]["heads"], ["L0H0", "L0H1"])
        self.assertEqual(r["foo"]["heads"], ["L0H1"])
        self.assertAlmostEqual(r["previous-token"]["ratio"], 12.0)
        self.assertEqual((r["previous-token"]["bar"], r["bracket"]["bar"], r["foo"]["bar"]),
                         (0.5, 0.3, 0.2))

    def test_a_best_head_under_the_bar_serves_nothing(self):
        # bracket's best head at 0.29 < 0.30: not served, so no head serves it although
        # heads.csv has L0H0 at 0.35 (a served relation's heads come from heads.csv).
        relations = dict(self.relations, bracket=rel("L0H0", 0.29, 0.05, 4.0))
        j = ablate_relations.judge(relations, self.heads, self.names)
        self.assertEqual((j["served"], j["distinct_heads"], j["shared_heads"]), (2, 2, 0))
        self.assertEqual(j["relations"]["bracket"]["heads"], [])

    def test_masked_heads_serve_nothing(self):
        heads = [self.heads[0], dict(self.heads[1], masked="1")]
        relations = dict(self.relations, foo=rel("L0H0", 0.25, 0.1, 3.0, bar=0.2))
        j = ablate_relations.judge(relations, heads, self.names)
        self.assertEqual(j["relations"]["bracket"]["heads"], ["L0H0"])
        self.assertEqual((j["served"], j["distinct_heads"], j["shared_heads"]), (3, 1, 1))

    def test_a_relation_without_a_score_is_not_served(self):
        j = ablate_relations.judge({"bracket": {"best_head": None, "attention": None}},
                                   self.heads, ["bracket", "missing"])
        self.assertEqual((j["scored"], j["served"], j["distinct_heads"]), (2, 0, 0))


class Causal(unittest.TestCase):
    """The same run with the ablation per relation: heads.csv says which relations
    each head is needed for. L0H0 attends to previous-token and bracket but is needed
    only for bracket; L0H1 attends to bracket and foo and is needed for foo only.
    Served: bracket {L0H0} and foo {L0H1}; previous-token is attended, not served."""

    heads = [dict(head(0, 0, 0.62, 0.35, 0.05, 0), needed="bracket", serves="bracket"),
             dict(head(0, 1, 0.10, 0.31, 0.25, 0), needed="foo", serves="foo")]
    relations = dict(Judge.relations, bracket=dict(rel("L0H0", 0.35, 0.05, 4.0),
                                                   accuracy=0.95, logit_diff=3.5, pairs=40,
                                                   needed_head="L0H0"))

    def test_a_head_serves_only_what_it_attends_to_and_is_needed_for(self):
        j = ablate_relations.judge(self.relations, self.heads, Judge.names)
        self.assertTrue(j["causal"])
        r = j["relations"]
        self.assertEqual((r["previous-token"]["attended"], r["previous-token"]["served"]),
                         (1, 0))
        self.assertEqual(r["bracket"]["heads"], ["L0H0"])
        self.assertEqual(r["bracket"]["attending"], ["L0H0", "L0H1"])
        self.assertEqual(r["foo"]["heads"], ["L0H1"])
        self.assertEqual((j["served"], j["distinct_heads"], j["shared_heads"]), (2, 2, 0))
        self.assertEqual((r["bracket"]["accuracy"], r["bracket"]["needed_head"]), (0.95, "L0H0"))
        self.assertEqual(j["needed_per_head"], {"L0H0": 1, "L0H1": 1})
        self.assertEqual(ablate_relations.own_heads(j, Judge.names), ["bracket", "foo"])

    def test_a_head_serving_two_relations_is_no_ones_own(self):
        # L0H0 attends to previous-token and bracket and is now needed for both: it
        # serves two, so neither has a head of its own; foo keeps L0H1.
        heads = [dict(self.heads[0], needed="previous-token+bracket"), self.heads[1]]
        j = ablate_relations.judge(self.relations, heads, Judge.names)
        self.assertEqual(j["needed_per_head"], {"L0H0": 2, "L0H1": 1})
        self.assertEqual(ablate_relations.own_heads(j, Judge.names), ["foo"])


# Each fake summary.json's bars: previous-token's and foo's own, 0.30 for the others.
BARS = {"previous-token": 0.5, "foo": 0.2}


# The fake sweep: per (H, seed) each head's (prev, bracket, foo, qux) and, per relation,
# the best head's attention. foo carries its own bar (0.20) in summary.json; qux, at
# 0.10 everywhere, is served nowhere.
#   H=1 s1: prev 0.55, bracket 0.40 served by L0H0          -> served 2, distinct 1, shared 1
#   H=1 s2: bracket 0.35 served by L0H0 (prev 0.45 under)   -> served 1, distinct 1, shared 0
#   H=2 s1: prev L0H0 0.70, bracket L0H1 0.50, foo L0H1 0.30 -> served 3, distinct 2, shared 1
#   H=2 s2: prev L0H0 0.80, bracket L0H1 0.40, foo L0H0 0.25 -> served 3, distinct 2, shared 1
SWEEP_HEADS = {
    (1, 1): [(0.55, 0.40, 0.10, 0.10)],
    (1, 2): [(0.45, 0.35, 0.05, 0.10)],
    (2, 1): [(0.70, 0.10, 0.10, 0.10), (0.20, 0.50, 0.30, 0.05)],
    (2, 2): [(0.80, 0.10, 0.25, 0.10), (0.10, 0.40, 0.05, 0.05)],
}
UNIFORM = {"previous-token": 0.05, "bracket": 0.04, "foo": 0.10, "qux": 0.02}


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


# With the ablation per relation (CausalSweep): per (H, seed) the relations each head
# is needed for, and each relation's minimal-pair accuracy (none for previous-token).
#   H=1 s1: L0H0 needed for previous-token and bracket     -> own heads: none
#   H=1 s2: L0H0 needed for bracket                         -> own: bracket
#   H=2 s1: L0H0 previous-token; L0H1 bracket and foo       -> own: previous-token
#   H=2 s2: L0H0 previous-token; L0H1 bracket               -> own: previous-token, bracket
SWEEP_NEEDED = {
    (1, 1): ["previous-token+bracket"],
    (1, 2): ["bracket"],
    (2, 1): ["previous-token", "bracket+foo"],
    (2, 2): ["previous-token", "bracket"],
}
SWEEP_ACCURACY = {  # bracket, foo
    (1, 1): (0.95, 0.50), (1, 2): (0.85, 0.55), (2, 1): (0.99, 0.92), (2, 2): (0.97, 0.95),
}


# Each run's validation bits per byte: H = 1 at 3.7 ± 0.141, H = 2 at 3.05 ± 0.071.
SWEEP_BPB = {(1, 1): 3.6, (1, 2): 3.8, (2, 1): 3.0, (2, 2): 3.1}


def fake_ckpt(path, H, D):
    """A file as long as a checkpoint's header says (V = 8, T = 8, L = 1, C = 4), with
    zero parameters: what a finished run's model.ckpt must pass (check_size)."""
    dims = dict(V=8, T=8, L=1, H=H, C=4, D=D, gates=False)
    h = [0] * checkpoint.HEADER_INTS
    h[:10] = [checkpoint.MAGIC, checkpoint.VERSION, 8, 8, 1, H, 4, 0, 10, D]
    head = struct.pack("<%di" % checkpoint.HEADER_INTS, *h) + bytes(range(8)) + bytes(248)
    with open(path, "wb") as f:
        f.write(head + bytes(4 * checkpoint.parameter_count(dims)))


def fake_sweep(d, causal=False, vocab=0):
    fp = {"embd": 4, "fixed_head_size": 2, "layers": 1, "block": 8, "batch": 2, "steps": 10,
          "data": "fake.txt", "data_slice": False, "data_bytes": 1000, "val_frac": 0.1,
          "corpus": None, "accum": 1, "vocab": vocab}
    write_json(os.path.join(d, "sweep.json"),
               {"fingerprint": fp, "seeds": [1, 2], "arms": ["width"], "heads": [1, 2]})
    for (H, seed), rows in SWEEP_HEADS.items():
        run = os.path.join(d, "runs", "H%02d-D%03d-s%d" % (H, 4 // H, seed))
        os.makedirs(os.path.join(run, "heads"))
        write_json(os.path.join(run, "done.json"), {"name": os.path.basename(run), "H": H,
                                                    "D": 4 // H, "seed": seed, "gate": 0})
        fake_ckpt(os.path.join(run, "model.ckpt"), H, 4 // H)
        with open(os.path.join(run, "run.jsonl"), "w") as f:
            for rec in ({"type": "settings", "params": 100, "threads": 1, "vocab_asked": vocab,
                         "merges": max(0, vocab - 256)},
                        {"type": "step", "step": 10, "loss": 3.0, "ms": 5.0},
                        {"type": "final", "step": 10, "val_loss": 2.5, "val_tokens": 100,
                         "train_loss": 2.4, "wall_seconds": 1.0,
                         "val_bpb": SWEEP_BPB[H, seed]}):
                f.write(json.dumps(rec) + "\n")
        names = ["previous-token", "bracket", "foo", "qux"]
        with open(os.path.join(run, "heads", "heads.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, HEAD_FIELDS + (["needed"] + ["cost_" + k for k in names]
                                                 if causal else []))
            w.writeheader()
            for h, scores in enumerate(rows):
                extra = {}
                if causal:
                    needed = SWEEP_NEEDED[H, seed][h]
                    extra = {"needed": needed}
                    extra.update({"cost_" + k: "0.5" if k in needed.split("+") else "0.01"
                                  for k in names})
                w.writerow(dict(head(0, h, *scores), **extra))
        relations = {}
        for k, name in enumerate(names):
            best = max(range(len(rows)), key=lambda h: rows[h][k])
            relations[name] = rel("L0H%d" % best, rows[best][k], UNIFORM[name], 1.0 + seed,
                                  bar=BARS.get(name, 0.3))
            if causal and name in ("bracket", "foo"):
                relations[name].update(accuracy=SWEEP_ACCURACY[H, seed][k - 1], logit_diff=2.0,
                                       pairs=50)
        write_json(os.path.join(run, "heads", "summary.json"),
                   {"relations": relations, "type_counts": {"mixed": H}, "mean_entropy": 0.5,
                    "mean_distance": 2.0, "effective_heads": 1.0, "removable_heads_1pct": 0,
                    "max_importance": 0.1, "base_loss": 2.5})


class Sweep(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ablate_relations.")
        fake_sweep(self.dir)
        ablate_report.write_all(self.dir)
        self.md = read(os.path.join(self.dir, "ablation.md"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_the_check_passes_and_notices_a_missing_table(self):
        self.assertEqual(ablate_report.check(self.dir), [])
        cut = self.md.replace(ablate_relations.SERVED, "(cut)")
        cli.write_file(os.path.join(self.dir, "ablation.md"), cut)
        problems = ablate_report.check(self.dir)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn(ablate_relations.SERVED, problems[0])

    def test_served_table_counts_relations_and_heads(self):
        self.assertIn("| width | 1 | 4 | 1 | 4 | 1.5 (1–2) | 1 | 0.5 (0–1) | 2 |", self.md)
        self.assertIn("| width | 2 | 2 | 2 | 4 | 3 | 2 | 1 | 2 |", self.md)

    def test_relation_table_has_attention_uniform_ratio_bar_seeds_and_loss(self):
        # previous-token at H=1: 0.55 and 0.45 -> 0.500 ± 0.071, uniform 0.05, ratio 10;
        # at the 0.50 bar in seed 1 only; losses 2 and 3 -> 2.500 ± 0.707.
        self.assertIn("| previous-token | width | 1 | 4 | L0H0 ×2 | 0.500 ± 0.071 | 0.050 | 10.0 "
                      "| 0.50 | 1/2 | 2.500 ± 0.707 |", self.md)
        # foo's best head: L0H1 in seed 1 (0.30), L0H0 in seed 2 (0.25).
        self.assertIn("| foo | width | 2 | 2 | L0H0, L0H1 | 0.275 ± 0.035 | 0.100 | 2.8 | 0.20 | "
                      "2/2 |", self.md)
        self.assertIn("| qux | width | 2 | 2 | L0H0 ×2 | 0.100 | 0.020 | 5.0 | 0.30 | 0/2 |",
                      self.md)

    def test_sentences_follow_the_numbers(self):
        for s in ["At H = 1, 1.5 of 4 relations have a head above the bar (range 1–2 over 2 "
                  "seeds) with 1 distinct head; at H = 2, 3 of 4 relations have a head above the "
                  "bar (the same in each of 2 seeds) with 2 distinct heads.",
                  "Runs in which one head serves two or more relations: 1 of 2 at H = 1, 2 of "
                  "2 at H = 2.",
                  "No head is above the bar at any H, in any seed, for qux (best 0.100, bar "
                  "0.30).",
                  "Served at every H in every seed: bracket.",
                  "previous-token 0.500 against 0.750 (H = 2); bracket 0.375 against 0.450 "
                  "(H = 2); foo 0.075 against 0.275 (H = 2); qux 0.100 against 0.100 (H = 2).",
                  "Bars (from summary.json's \"bar\"): previous-token 0.50, bracket 0.30, "
                  "foo 0.20, qux 0.30."]:
            self.assertIn(s, self.md)

    def test_relations_csv_has_a_row_per_run_and_relation(self):
        rows = ablate_report.read_csv(os.path.join(self.dir, "relations.csv"))
        self.assertEqual(len(rows), 4 * 4)
        r = next(r for r in rows if (r["run"], r["relation"]) == ("H02-D002-s1", "foo"))
        self.assertEqual((r["served"], r["serving_heads"], r["bar"]), ("1", "L0H1", "0.2"))
        r = next(r for r in rows if (r["run"], r["relation"]) == ("H02-D002-s1", "bracket"))
        self.assertEqual((r["best_head"], r["served"], r["serving_heads"]), ("L0H1", "1", "L0H1"))
        runs = {r["run"]: r for r in ablate_report.read_csv(os.path.join(self.dir,
                                                                          "ablation.csv"))}
        self.assertEqual([runs["H01-D004-s1"][c] for c in ablate_relations.RUN_COLUMNS],
                         ["4", "2", "1", "1"])
        self.assertEqual([runs["H02-D002-s2"][c] for c in ablate_relations.RUN_COLUMNS],
                         ["4", "3", "2", "1"])

    def test_the_matrix_outlines_the_cells_at_the_bar(self):
        svg = read(os.path.join(self.dir, "plots", "relations_width.svg"))
        ET.fromstring(svg.encode("utf-8"))
        # First seeds only: H=1 s1 (prev 0.55, bracket 0.40) and H=2 s1 (L0H0 prev 0.70;
        # L0H1 bracket 0.50 and foo 0.30 >= 0.20): five cells at or above their bar.
        self.assertEqual(len(re.findall(r'fill="none" stroke="#000"', svg)), 5)
        self.assertIn("H = 2 (D = 2), seed 1", svg)
        self.assertIn(">0.55</text>", svg)


class CausalSweep(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ablate_relations.")
        fake_sweep(self.dir, causal=True)
        ablate_report.write_all(self.dir)
        self.md = read(os.path.join(self.dir, "ablation.md"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_the_check_passes(self):
        self.assertEqual(ablate_report.check(self.dir), [])

    def test_sentences_count_needed_heads_and_heads_of_their_own(self):
        for s in ["At H = 1 the head needed for the most relations is needed for 1.5 (1–2) of 4 "
                  "(over 2 seeds); heads needed for some relation: 1 of 1 (one per layer).",
                  "Relations with a head of their own (a head that serves the relation and no "
                  "other), of 4: 0.5 (0–1) at H = 1, 1.5 (1–2) at H = 2.",
                  "At H = 1, learned (minimal-pair accuracy >= 0.9 in every seed): none; near "
                  "chance (mean <= 0.6): foo.",
                  "At H = 2, learned (minimal-pair accuracy >= 0.9 in every seed): bracket, "
                  "foo; near chance (mean <= 0.6): none."]:
            self.assertIn(s, self.md)

    def test_the_minimal_pair_table_and_the_cost_matrix(self):
        self.assertIn(ablate_relations.CAUSAL, self.md)
        # bracket at H = 2: 0.99 and 0.97; served by L0H1 in both seeds (it attends,
        # 0.50 and 0.40, and is needed).
        self.assertIn("| bracket | width | 2 | 2 | 0.980 ± 0.014 | 2.00 | – | 2/2 | 2/2 | 2/2 |",
                      self.md)
        svg = read(os.path.join(self.dir, "plots", "ablation_width.svg"))
        ET.fromstring(svg.encode("utf-8"))
        self.assertIn(">0.50</text>", svg)


class ShortAnswer(unittest.TestCase):
    """The short answer on top of ablation.md and index.html, from the causal fake sweep.
    Own serving heads (attends, needed, serves nothing else), worked out by hand:
      H=1 s1: L0H0 serves previous-token and bracket        -> none of its own
      H=1 s2: L0H0 serves bracket                            -> bracket
      H=2 s1: L0H0 previous-token; L0H1 bracket and foo      -> previous-token
      H=2 s2: L0H0 previous-token; L0H1 bracket              -> previous-token, bracket
    Bits per byte: 3.7 ± 0.141 and 3.05 ± 0.071; pooled s.d. sqrt((0.02 + 0.005) / 2) =
    0.1118, t(df = 2) = 4.303, margin 4.303 · 0.1118 · sqrt(1/2 + 1/2) = 0.481 < 0.65."""

    SENTENCES = [
        "Bits per byte (validation, mean ± s.d. over 2 seeds) at H = 1, 2: 3.700 ± 0.141, "
        "3.050 ± 0.071. The loss falls with H: H = 2 is 0.650 bits per byte below H = 1, "
        "more than the seed noise (t·s.e. margin 0.481). Lowest at H = 2.",
        "Relations with a head of their own in every seed (it attends to the relation's key "
        "above the bar, silencing it alone costs the relation at least the needed share, and "
        "it serves no other relation): previous-token from H = 2 on. In some seeds only: "
        "bracket (at most 1 of 2 seeds, at H = 1). In no seed at any H: foo, qux.",
        "Heads that can go, one at a time (silencing that head alone raises the loss by under "
        "1%; mean ± s.d. over seeds): H = 1: 0 of 1; H = 2: 0 of 2. Removing several at "
        "once was not measured."]

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ablate_page.")
        fake_sweep(self.dir, causal=True)
        ablate_report.write_all(self.dir)
        self.md = read(os.path.join(self.dir, "ablation.md"))
        self.page = read(os.path.join(self.dir, "index.html"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_the_markdown_opens_with_the_short_answer(self):
        first_screen = "\n".join(self.md.split("\n")[:12])
        self.assertIn(ablate_page.ANSWER, first_screen)
        for s in self.SENTENCES:
            self.assertIn("- " + s, first_screen)
        self.assertLess(self.md.index(ablate_page.ANSWER), self.md.index("Data: "))

    def test_the_page_has_the_answer_above_the_figures_and_links_every_run(self):
        import html
        for s in self.SENTENCES:
            self.assertIn("<li>%s</li>" % html.escape(s), self.page)
        self.assertLess(self.page.index("Short answer"), self.page.index("<img"))
        for f in ("val_loss.svg", "relations_width.svg", "ablation_width.svg"):
            self.assertIn('<img src="plots/%s"' % f, self.page)
        for run in ("H01-D004-s1", "H01-D004-s2", "H02-D002-s1", "H02-D002-s2"):
            self.assertIn('<a href="runs/%s/heads/index.html">' % run, self.page)
        self.assertNotIn("http", self.page.replace('xmlns="http', ""))  # offline
        self.assertEqual(ablate_report.check(self.dir), [])

    def test_the_check_notices_a_page_without_its_answer(self):
        cli.write_file(os.path.join(self.dir, "index.html"), "<html></html>")
        self.assertEqual(ablate_report.check(self.dir),
                         ["index.html: no short answer"])


class Units(unittest.TestCase):
    """Units follow the tokeniser: a --vocab sweep's losses are per token."""

    def report(self, vocab):
        d = tempfile.mkdtemp(prefix="ablate_units.")
        self.addCleanup(shutil.rmtree, d)
        fake_sweep(d, vocab=vocab)
        ablate_report.write_all(d)
        svg = "".join(read(os.path.join(d, "plots", f)) for f in sorted(
            os.listdir(os.path.join(d, "plots"))))
        return read(os.path.join(d, "ablation.md")), svg, read(os.path.join(d, "index.html"))

    def test_a_vocab_sweep_says_nats_per_token_never_per_byte(self):
        md, svg, page = self.report(300)
        for text in (md, svg, page):
            self.assertNotIn("nats per byte", text, text[:300])
        self.assertIn("whole validation split in nats per token", md)
        self.assertIn("| loss (nats per token) |", md)
        self.assertIn("val loss (nats per token)", page)

    def test_a_byte_sweep_says_nats_per_byte_and_entropy_is_normalised(self):
        md, svg, _ = self.report(0)
        self.assertIn("whole validation split in nats per byte", md)
        self.assertNotIn("entropy (nats)", md)
        self.assertIn("norm. entropy", md)
        self.assertIn("normalised attention entropy (0 = one key, 1 = uniform", md)

    def test_the_loss_figures_start_at_zero_or_mark_their_zoom(self):
        d = tempfile.mkdtemp(prefix="ablate_units.")
        self.addCleanup(shutil.rmtree, d)
        fake_sweep(d)
        ablate_report.write_all(d)
        svg = read(os.path.join(d, "plots", "val_loss.svg"))
        self.assertIn("validation bits per byte", svg)
        self.assertIn("Axis from zero", svg)
        self.assertIn("axis broken", svg)
        for f in ("val_loss.svg", "curves_width.svg"):  # a y tick at 0 (anchor end)
            self.assertRegex(read(os.path.join(d, "plots", f)),
                             r'text-anchor="end" fill="#444">0</text>', f)


class MatrixFits(unittest.TestCase):
    """plots/relations_ARM.svg with L = 4 and H = 1, 4, 8, 16 (the default sweep's
    sizes): at most 1,300 px wide, a value in every cell, upright column labels."""

    def test_every_panel_fits_and_every_cell_has_its_value(self):
        names = ["previous-token", "bracket", "foo", "qux"]
        rows = []
        for H in (1, 4, 8, 16):
            heads = [head(l, h, 0.6, 0.1, 0.05, 0.0) for l in range(4) for h in range(H)]
            rows.append({"arm": "width", "H": H, "D": 128 // H, "seed": 1, "head_rows": heads,
                         "judged": ablate_relations.judge(Judge.relations, heads, names)})
        svg = ablate_relations.matrix_plot(rows, names, "width", "fixed width").render()
        root = ET.fromstring(svg.encode("utf-8"))
        self.assertLessEqual(int(root.get("width")), 1300)
        cells = 4 * (1 + 4 + 8 + 16) * len(names)
        values = re.findall(r'text-anchor="middle"[^>]*>(?:\d\.\d\d|–)</text>', svg)
        self.assertEqual(len(values), cells)
        texts = list(root.iter("{http://www.w3.org/2000/svg}text"))
        for k in names:  # each panel names its columns, in upright text
            labels = [t for t in texts if t.text == k]
            self.assertEqual(len(labels), 4, k)
            self.assertTrue(all(t.get("transform") is None for t in labels), k)


class AblationCsv(unittest.TestCase):
    """ablation.csv: a value that is absent or not a finite number is an empty cell."""

    def test_absent_and_non_finite_values_are_empty_cells(self):
        rows = [{"arm": "width", "run": "H01-D128-s1", "H": 1, "seed": 1, "val_loss": 2.5,
                 "ppl": float("nan"), "params": None, "tok_s": float("inf"),
                 "n_mixed": 3}]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ablation.csv")
            ablate_report.write_csv(path, rows)
            got = ablate_report.read_csv(path)[0]
        self.assertEqual((got["val_loss"], got["ppl"], got["params"], got["tok_s"],
                          got["n_mixed"]), ("2.5", "", "", "", "3"))


class DefaultOut(unittest.TestCase):
    """The default --out follows the settings that change a run."""

    def out(self, *argv):
        return os.path.relpath(ablate.parse_args(list(argv)).out, ablate.REPO)

    def test_a_quick_sweep_and_the_full_sweep_never_share_a_directory(self):
        quick = self.out("--corpus", "text", "--vocab", "1024", "--seeds", "1", "--steps",
                         "300")
        full = self.out("--corpus", "text", "--vocab", "1024")
        self.assertEqual((quick, full), ("runs/ablation-v1024-steps300",
                                         "runs/ablation-v1024"))
        self.assertEqual(self.out(), "runs/ablation")
        self.assertEqual(self.out("--builtin"), "runs/ablation")
        self.assertEqual(self.out("--quick"), "runs/ablation-quick")
        self.assertEqual(self.out("--corpus", "induction", "--long", "--head-dropout", "0.1"),
                         "runs/ablation-induction-long-hd0.1")
        self.assertEqual(self.out("--data", "/x/book.txt", "--head-size", "16"),
                         "runs/ablation-data-book-D16")

    def test_an_explicit_out_is_kept(self):
        self.assertEqual(ablate.parse_args(["--steps", "300", "--out", "/tmp/x"]).out, "/tmp/x")

    def test_the_lesson_preset(self):
        a = ablate.parse_args(["--lesson"])
        self.assertEqual((a.heads, a.seeds, a.arm, a.steps, a.corpus, a.layers),
                         ("1 4 16", 3, "width", 4000, "text", "1 2"))
        self.assertEqual(os.path.relpath(a.out, ablate.REPO), "runs/ablation-lesson")
        a = ablate.parse_args(["--lesson", "--data", "/x/book.txt", "--seeds", "5"])
        self.assertEqual((a.corpus, a.seeds), (None, 5))
        self.assertEqual(os.path.relpath(a.out, ablate.REPO), "runs/ablation-lesson-data-book")

    def test_a_short_sweep_warms_up_for_a_fifth_of_its_steps_on_the_built_in_corpus(self):
        # A sweep shorter than the recipe's 4,000 steps warms up for a fifth of them
        # (the recipe's 800 would be a third of 2,500); one as long or longer, the
        # lesson's among them, keeps the recipe's 800. The plan asks ./train
        # --print-settings, so it needs the programs (HEADCOUNT_BIN, as make test sets).
        bindir = os.path.abspath(os.environ.get("HEADCOUNT_BIN", ablate.REPO))
        with tempfile.TemporaryDirectory() as d:
            for args, steps, warmup in ((["--lesson"], 4000, 800),
                                        (["--steps", "2500"], 2500, 500),
                                        (["--lesson", "--steps", "500"], 500, 100),
                                        (["--steps", "200"], 200, 40),
                                        ([], 4000, 800),
                                        (["--steps", "6000"], 6000, 800),
                                        (["--quick"], 30, 10)):
                a = ablate.parse_args(args + ["--bin", bindir, "--out", os.path.join(d, "s")])
                sweep, _ = ablate.make_plan(a)
                fp = sweep["fingerprint"]
                self.assertEqual((fp["steps"], fp["warmup"]), (steps, warmup), args)

    def test_a_sweep_on_a_file_records_the_settings_its_runs_train_with(self):
        # A --data run keeps train's defaults (2,000 steps, lr 1e-3, bytes), not the
        # built-in corpus's recipe; the fingerprint, which the report prints, says so.
        bindir = os.path.abspath(os.environ.get("HEADCOUNT_BIN", ablate.REPO))
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "book.txt")
            with open(data, "w") as f:
                f.write("a small book of words. " * 400)
            settings = json.loads(subprocess.run(
                [os.path.join(bindir, "train"), "--print-settings", "--data", data],
                capture_output=True, text=True, check=True).stdout)
            for args in (["--data", data], ["--lesson", "--data", data]):
                a = ablate.parse_args(args + ["--bin", bindir, "--out", os.path.join(d, "s")])
                fp = ablate.make_plan(a)[0]["fingerprint"]
                want = dict(settings, steps=4000) if "--lesson" in args else settings
                for k in ("steps", "lr", "min_lr", "warmup", "vocab"):
                    self.assertEqual(fp[k], want[k], (args, k))
                self.assertNotEqual(fp["lr"], 5e-3, "the built-in recipe's rate")


class JunkSweep(unittest.TestCase):
    """--report-only and --check on a sweep directory whose files are junk: one line
    naming the file, exit 1, never a traceback."""

    def run_ablate(self, d, flag):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                              "ablate.py")
        p = subprocess.run([sys.executable, script, flag, "--out", d], capture_output=True,
                           text=True)
        return p.returncode, p.stderr

    def test_junk_files_are_one_line_errors(self):
        d = tempfile.mkdtemp(prefix="ablate_junk.")
        try:
            fake_sweep(d)
            cases = [("sweep.json", b"not json", "sweep.json: not valid JSON"),
                     ("sweep.json", b"[1, 2]", "not a sweep this script wrote"),
                     ("runs/H01-D004-s1/run.jsonl", b"\xff\xfe", "run.jsonl: not a training log"),
                     ("runs/H01-D004-s1/heads/summary.json", b"{", "summary.json: not valid"),
                     ("runs/H01-D004-s1/heads/summary.json",
                      b'{"relations":{"bracket":{"attention":0.5}}}',
                      'summary.json: relation bracket has no "bar"'),
                     ("runs/H01-D004-s1/heads/heads.csv", b"layer,head\nx,y\n",
                      "heads.csv: row 2 has no whole-number layer and head")]
            keep = {}
            for name, junk, want in cases:
                path = os.path.join(d, name)
                keep.setdefault(path, open(path, "rb").read())
                with open(path, "wb") as f:
                    f.write(junk)
                for flag in ("--report-only", "--check"):
                    rc, err = self.run_ablate(d, flag)
                    self.assertEqual(rc, 1, err)
                    self.assertEqual(err.count("\n"), 1, err)
                    self.assertIn(want, err)
                    self.assertNotIn("Traceback", err)
                with open(path, "wb") as f:
                    f.write(keep[path])
        finally:
            shutil.rmtree(d)


class NoneServed(unittest.TestCase):
    def test_an_arm_where_nothing_is_served_says_so_once(self):
        names = ["previous-token", "bracket"]
        relations = {"previous-token": rel("L0H0", 0.40, 0.05, 2.0, bar=0.5),
                     "bracket": rel("L0H1", 0.20, 0.05, 4.0)}
        heads = [head(0, 0, 0.40, 0.1, 0, 0), head(0, 1, 0.1, 0.2, 0, 0)]
        rows = [{"arm": "width", "H": H, "D": 4 // H, "seed": seed, "run": "r",
                 "judged": ablate_relations.judge(relations, heads, names)}
                for H in (1, 2) for seed in (1, 2)]
        g = ablate_relations.groups(rows, ["width"])
        self.assertEqual(ablate_relations.served_sentence("W", g, "width"),
                         "**W**: at every H (1, 2), none of the 2 relations has a head above the "
                         "bar, in any seed.")
        self.assertEqual(ablate_relations.shared_sentence(g, "width"), "")
        self.assertEqual(ablate_relations.never_always(g, "width", names),
                         ["The best head's attention in any run, against the bar: "
                          "previous-token (best 0.400, bar 0.50), bracket (best 0.200, bar "
                          "0.30)."])


class Ramp(unittest.TestCase):
    def test_ends_and_clamping(self):
        self.assertEqual(svgchart.ramp(0, 0, 1), "#ffffff")
        self.assertEqual(svgchart.ramp(1, 0, 1), "#08306b")
        self.assertEqual(svgchart.ramp(2, 0, 1), "#08306b")
        self.assertEqual(svgchart.ramp(-1, 0, 1), "#ffffff")
        self.assertEqual(svgchart.ramp(0.5, 0, 1), "#8498b5")


def md_tables(md):
    """The header cells of every markdown table in md, with the text after it."""
    lines, out = md.split("\n"), []
    for i, line in enumerate(lines[:-1]):
        if line.startswith("| ") and lines[i + 1].startswith("|---"):
            out.append(([c.strip() for c in line.strip("|").split("|")],
                        "\n".join(lines[i + 2:])))
    return out


class Legends(unittest.TestCase):
    """Every column of every table of ablation.md and index.html has a one-line legend:
    in the md a "- NAME: ..." line under the table (or, for a second table of the same
    columns, a pointer back to the first); on the page a <dt>NAME</dt>."""

    def test_every_column_of_the_reports_has_a_legend(self):
        for causal in (False, True):
            d = tempfile.mkdtemp(prefix="ablate_legends.")
            try:
                fake_sweep(d, causal=causal)
                ablate_report.write_all(d)
                md = read(os.path.join(d, "ablation.md"))
                tables = md_tables(md)
                self.assertGreaterEqual(len(tables), 5)
                for head, after in tables:
                    legend = after.split("\n\n|", 1)[0]
                    if legend.lstrip("\n").startswith("Columns: as under"):
                        continue
                    for h in head:
                        self.assertIn("\n- %s: " % h, legend, (h, legend[:300]))
                page = read(os.path.join(d, "index.html"))
                for table in page.split("<table>")[1:]:
                    for th in re.findall(r"<th>([^<]*)</th>", table.split("</table>")[0]):
                        self.assertIn("<dt>%s</dt>" % th, table.split("</table>")[1].split(
                            "</dl>")[0], th)
            finally:
                shutil.rmtree(d)

    def test_a_column_without_a_legend_stops_the_report(self):
        with self.assertRaises(KeyError):
            ablate_legend.legend(["H", "Mystery Column"], "nats per byte")
        self.assertEqual(ablate_legend.one("copy loss ratio", "nats per byte"),
                         "copy: loss on the repeat over the loss at the first occurrence")


class NoneBest(unittest.TestCase):
    """A seed whose best head is not above the uniform head names none, as ./infer
    --heads prints it (issue 37: "rare" named a head at 0.040 against 0.041)."""

    def test_a_best_head_not_above_uniform_is_none(self):
        j = ablate_relations.judge({"rare": rel("L0H1", 0.040, 0.041, 3.0),
                                    "copy": rel("L0H0", 0.2, 0.041, 3.0)},
                                   [head(0, 0, 0, 0, 0, 0), head(0, 1, 0, 0, 0, 0)],
                                   ["rare", "copy"])
        xs = [j["relations"]["rare"], j["relations"]["rare"], j["relations"]["copy"]]
        self.assertEqual(ablate_relations.best_heads(xs), "none ×2, L0H0")


class ClosedHeads(unittest.TestCase):
    """A closed head (heads.csv gate 0) attends to and serves nothing, even when it is
    summary.json's best head (reports before ./infer left closed heads out)."""

    def test_a_closed_head_serves_nothing(self):
        heads = [dict(head(0, 0, 0.9, 0, 0, 0), gate="0"), dict(head(0, 1, 0.1, 0, 0, 0),
                                                                gate="0.8")]
        j = ablate_relations.judge({"previous-token": rel("L0H0", 0.9, 0.05, 2.0, bar=0.5)},
                                   heads, ["previous-token"])
        x = j["relations"]["previous-token"]
        self.assertEqual((x["attending"], x["served"]), ([], 0))
        heads[0]["gate"] = "0.5"
        j = ablate_relations.judge({"previous-token": rel("L0H0", 0.9, 0.05, 2.0, bar=0.5)},
                                   heads, ["previous-token"])
        self.assertEqual(j["relations"]["previous-token"]["heads"], ["L0H0"])


if __name__ == "__main__":
    unittest.main()
