"""ablate_report: the head-count sweep's report (ablation.csv, ablation.md, plots/) and
the check of its outputs.

Reads DIR/sweep.json (written by ablate.py) and, for every finished run (one with
DIR/runs/NAME/done.json, written last): run.jsonl, train's log (read by runlog.py),
whose final record has the whole-val-split loss, and heads/summary.json from
./infer --heads --report. For a --corpus induction sweep it also applies
induction_phase.py's criterion to each run's log (the per-head repeat scores of
--heads-every): the induction table, its sentences and plots/repeat.svg. Running
the sweep is ablate.py's job; the chart primitives are svgchart.py's and the
learning curves plot_log.py's. Standard library only.
"""
import csv
import html
import json
import math
import os
import re
import stat
import statistics
import xml.etree.ElementTree as ET

import ablate_gates
import ablate_legend
import ablate_page
import ablate_relations
import checkpoint
import cli
import induction_phase
import plot_log
import runlog
from ablate_stats import csv_text, mean_sd, num, pm, spread
from svgchart import PALETTE, Axes, Svg, fmt, legend, padded

ARMS = {"width": "fixed width (C fixed, D = C/H)",
        "headsize": "fixed head size (D fixed, attention width H·D)"}
ARM_COLORS = {"width": "#1f77b4", "headsize": "#d62728"}
# The head types of ./infer --heads, in the report's order; any other type found in a
# summary.json gets a column after these.
TYPES = ["previous-token", "local", "induction", "first-position", "delimiter", "broad",
         "mixed", "masked"]
SUMMARY = ["mean_entropy", "mean_distance", "effective_heads", "removable_heads_1pct",
           "max_importance", "base_loss"]
COLUMNS = ["arm", "run", "L", "H", "D", "C", "attn_width", "params", "seed", "steps", "tokens",
           "val_loss", "ppl", "bpb", "val_tokens", "train_loss", "tok_s", "train_seconds",
           "wall_seconds", "threads", "heads_mean_entropy", "heads_mean_distance",
           "compromise_overlap"] + [
           "n_" + t.replace("-", "_") for t in TYPES] + [
           "effective_heads", "removable_heads_1pct", "max_importance", "heads_base_loss",
           "heads_report"]
INDUCTION_COLUMNS = ["induction_formed", "induction_phase_step", "induction_final_repeat",
                     "copy_loss_ratio"]
# A copy loss ratio below this means the model predicts repeated letters far better
# than first occurrences: it copies, whichever heads do it.
COPIES_BELOW = 0.5
# Two-sided 5% critical values of Student's t, by degrees of freedom.
T_CRIT = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
          9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000}


def read_json(path):
    """A JSON file of the sweep; ValueError naming the file when it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError both are
        raise ValueError("%s: not valid JSON text (%s)" % (path, e)) from None


# The fingerprint's numbers a report computes with: whole numbers >= 1.
SWEEP_COUNTS = ("steps", "embd", "layers", "block", "batch", "fixed_head_size")


def read_sweep(outdir):
    """DIR/sweep.json, checked before anything is computed or written from it: the
    fingerprint's numbers finite (JSON as Python reads it allows NaN and
    Infinity), its counts whole numbers >= 1, the heads, seeds and depths (layers,
    absent before --layers) whole numbers >= 1, the gates finite numbers >= 0;
    ValueError naming the file otherwise."""
    path = os.path.join(outdir, "sweep.json")
    sweep = read_json(path)

    def bad(what):
        return ValueError("%s: %s: not a sweep this script wrote" % (path, what))

    def count(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1

    if not isinstance(sweep, dict) or not isinstance(sweep.get("fingerprint"), dict):
        raise bad("no fingerprint object")
    fp = sweep["fingerprint"]
    for k, v in sorted(fp.items()):
        if isinstance(v, float) and not math.isfinite(v):
            raise bad('"%s": %s is not a finite number' % (k, v))
    for k in SWEEP_COUNTS:
        if not count(fp.get(k)):
            raise bad('"%s": %s, expected a whole number >= 1' % (k, json.dumps(fp.get(k))))
    for k in ("heads", "seeds", "layers"):
        v = sweep.get(k) if k != "layers" or "layers" in sweep else []
        if not isinstance(v, list) or not all(count(x) for x in v):
            raise bad('"%s": %s, expected a list of whole numbers >= 1' % (k, json.dumps(v)))
    gates = sweep.get("gates", [])
    if not isinstance(gates, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            and x >= 0 for x in gates):
        raise bad('"gates": %s, expected a list of numbers >= 0' % json.dumps(gates))
    return sweep


def write_json(path, obj):
    cli.write_file(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_csv(path):
    """A CSV file's rows as dicts; ValueError naming the file when it is not UTF-8 CSV."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    except (ValueError, csv.Error) as e:
        raise ValueError("%s: not a UTF-8 CSV file (%s)" % (path, e)) from None


def read_finished_log(path):
    """A finished run's train --log, read by runlog (a bad line is a cli.Error naming
    it); ValueError naming the file when it has no settings or no final record."""
    log = runlog.read(path)
    if log.settings is None or log.final is None:
        raise ValueError("%s: not a training log of a finished run (no %s record)"
                         % (path, "settings" if log.settings is None else "final"))
    return log


def read_heads_csv(path):
    """./infer --heads's heads.csv: read_csv's rows, each with a whole-number layer and
    head (every reader labels heads by them); ValueError naming the file otherwise."""
    rows = read_csv(path)
    for i, r in enumerate(rows):
        if not all((r.get(k) or "").isdigit() for k in ("layer", "head")):
            raise ValueError("%s: row %d has no whole-number layer and head: not a heads.csv "
                             "that ./infer --heads wrote" % (path, i + 2))
    return rows


def depths(sweep):
    """The sweep's depths L: sweep.json's "layers", or train's one depth for a sweep
    from before --layers."""
    return sweep.get("layers") or [sweep["fingerprint"]["layers"]]


def part_key(sweep, arm, L):
    """The report's section of an arm at depth L: the arm's name at train's own depth
    (as before --layers), ARM-L<L> at any other."""
    return arm if L == sweep["fingerprint"]["layers"] else "%s-L%d" % (arm, L)


def parts(sweep):
    """{section key: title}, for every (arm, L) of the sweep, by arm, then L."""
    return {part_key(sweep, arm, L): arm_title(arm, sweep["fingerprint"], L)
            for arm in ARMS if arm in sweep["arms"] for L in depths(sweep)}


def runs_of(sweep):
    """The distinct runs: {name, L, H, D, seed, arms, cost}, seed by seed, costliest
    first (so parallel jobs end together). The H in both arms with the same D is one
    run. A run of train's own depth is H<H>-D<D>-s<seed>, as before --layers; one of
    another depth has the prefix L<L>-. Its arms are section keys (part_key)."""
    fp, runs = sweep["fingerprint"], {}
    for seed in sweep["seeds"]:
        for arm in [x for x in ARMS if x in sweep["arms"]]:
            for L in depths(sweep):
                for H in sweep["heads"]:
                    D = fp["embd"] // H if arm == "width" else fp["fixed_head_size"]
                    name = ("" if L == fp["layers"] else "L%d-" % L) + "H%02d-D%03d-s%d" % (
                        H, D, seed)
                    runs.setdefault(name, {"name": name, "L": L, "H": H, "D": D, "seed": seed,
                                           "arms": []})
                    runs[name]["arms"].append(part_key(sweep, arm, L))
    for r in runs.values():  # multiply-adds per token, for the ETA's ratios only
        L, C, T, HD = r["L"], fp["embd"], fp["block"], r["H"] * r["D"]
        r["cost"] = L * (4 * C * HD + 8 * C * C + T * HD) + C * 65
        r["gate"] = 0  # no head gates: the plain run
    return sorted(runs.values(), key=lambda r: (r["seed"], -r["cost"]))


def gate_runs_of(sweep):
    """The gate sweep's runs (sweep.json "gates", the LAMBDAs > 0): each run of
    runs_of once more per LAMBDA, named NAME-gLAMBDA, with "gate": LAMBDA and "plain":
    NAME, the run it is compared with."""
    return [dict(r, name="%s-g%g" % (r["name"], lam), gate=lam, plain=r["name"])
            for lam in sweep.get("gates", []) for r in runs_of(sweep)]


def all_runs(sweep):
    """Every run a sweep trains: the plain ones, then the gated ones."""
    return runs_of(sweep) + gate_runs_of(sweep)


RUN_KEYS = ("name", "H", "D", "seed", "gate")


def unfinished(outdir, run):
    """Why DIR/runs/NAME is not the finished run `run`, or None when it is: its
    done.json (written last) is a plain file holding the run's own record, and its
    model.ckpt a checkpoint as long as its header says (not cut short). Checked
    without blocking on a FIFO or reading a whole checkpoint, so a rerun and
    --check can ask it of every run."""
    d = os.path.join(outdir, "runs", run["name"])
    done = os.path.join(d, "done.json")
    try:
        st = os.stat(done)
    except FileNotFoundError:
        return "unfinished (no done.json)"
    except OSError as e:
        return "done.json: %s" % e.strerror
    if not stat.S_ISREG(st.st_mode):
        return "done.json is not a regular file"
    try:
        rec = read_json(done)
    except ValueError as e:
        return str(e)
    except OSError as e:
        return "done.json: %s" % e.strerror
    if not isinstance(rec, dict) or any(rec.get(k, 0 if k == "gate" else None) != run[k]
                                        for k in RUN_KEYS if k in run):
        return "%s: not this run's record" % done
    try:
        checkpoint.check_size(os.path.join(d, "model.ckpt"))
    except checkpoint.CheckpointError as e:
        return str(e)
    return None


def load(outdir):
    """The sweep and its finished runs (unfinished): {name: {dir, log, summary,
    heads}}, heads being heads/heads.csv's rows (one dict per head)."""
    sweep, runs = read_sweep(outdir), {}
    for r in all_runs(sweep):
        d = os.path.join(outdir, "runs", r["name"])
        if unfinished(outdir, r) is None:
            s, h = (os.path.join(d, "heads", f) for f in ("summary.json", "heads.csv"))
            summary = read_json(s) if os.path.exists(s) else {}
            ablate_relations.check_bars(summary, s)
            runs[r["name"]] = dict(r, dir=d, log=read_finished_log(os.path.join(d, "run.jsonl")),
                                   summary=summary,
                                   heads=read_heads_csv(h) if os.path.exists(h) else [])
    return sweep, runs


def is_induction(sweep):
    return sweep["fingerprint"].get("corpus") == "induction" and not sweep["fingerprint"]["data"]


def phase_of(log):
    """induction_phase.py's verdict on one run's log, as the row's induction_* fields
    (formed 0/1, phase step, final best layer>=1 repeat score, copy loss ratio); a log
    it cannot judge (no heads lines, one layer) gets none of them."""
    try:
        r = induction_phase.analyse(log, induction_phase.THRESHOLD)
    except induction_phase.NotJudged:  # the log has no layer>=1 heads lines
        return {}
    return {"induction_formed": int(r["formed"]), "induction_phase_step": r["phase_step"],
            "induction_final_repeat": r["final_best_repeat"],
            "copy_loss_ratio": r.get("copy_loss_ratio")}


def table_rows(sweep, runs, gated=False):
    """One row per arm and run (the shared H=4 run once in each arm), by arm, H, seed;
    with gated, the gate sweep's runs instead of the plain ones."""
    fp, rows, keys = sweep["fingerprint"], [], list(parts(sweep))
    tokens = fp["steps"] * fp["batch"] * fp["block"] * fp.get("accum", 1)
    for name, run in runs.items():
        if bool(run.get("gate")) != gated:
            continue
        fin, s = run["log"].final, run["summary"]
        train_s = sum(x["ms"] for x in run["log"].steps) / 1000.0
        row = {"run": name, "L": run["L"], "H": run["H"], "D": run["D"], "C": fp["embd"],
               "attn_width": run["H"] * run["D"], "params": run["log"].settings["params"],
               "seed": run["seed"], "steps": fp["steps"], "tokens": tokens,
               "val_loss": fin["val_loss"], "ppl": math.exp(fin["val_loss"]),
               "bpb": bits_per_byte(fin), "val_tokens": fin["val_tokens"],
               "train_loss": fin["train_loss"], "tok_s": round(tokens / train_s, 1),
               "train_seconds": round(train_s, 3), "wall_seconds": fin.get("wall_seconds"),
               "threads": run["log"].settings.get("threads"), "relations": s.get(
                   "relations") or {}, "head_rows": run["heads"],
               "heads_report": "runs/%s/heads/index.html" % name, "gate": run.get("gate", 0),
               "plain": run.get("plain"), "prune_curve": s.get("prune_curve")}
        for k in SUMMARY:
            row[k if k in COLUMNS else "heads_" + k] = s.get(k)
        # the compromise measure's mean overlap (docs/heads.md); none in older reports
        row["compromise_overlap"] = (s.get("compromise") or {}).get("overlap")
        if is_induction(sweep):
            row.update(phase_of(os.path.join(run["dir"], "run.jsonl")))
        for t, n in (s.get("type_counts") or {}).items():
            row["n_" + t.replace("-", "_")] = n
        rows += [dict(row, arm=arm) for arm in run["arms"] if arm in keys]
    return sorted(rows, key=lambda r: (keys.index(r["arm"]), r["H"], r["seed"]))


def write_csv(path, rows):
    extra = sorted({k for r in rows for k in r if k.startswith("n_")} - set(COLUMNS))
    cols = COLUMNS[:-5] + extra + COLUMNS[-5:] + [k for k in INDUCTION_COLUMNS + (
        ablate_relations.RUN_COLUMNS) if any(k in r for r in rows)]
    cli.write_file(path, csv_text(cols, rows))


def loss_unit(fp):
    """The unit of val loss and of every per-token loss: a --vocab sweep's tokens are
    byte pairs, so its cross-entropy is per token, not per byte."""
    return "nats per token" if fp.get("vocab") else "nats per byte"


def bits_per_byte(fin):
    """The final record's val_bpb; logs written before it existed are byte-level, where
    bits per byte is loss / ln 2."""
    return fin["val_bpb"] if fin.get("val_bpb") is not None else fin["val_loss"] / math.log(2)


def tables(by_h, L):
    """The arm's Vaswani-style table and its head-type table."""
    head = ["H", "D", "H·D", "params", "seeds", "val loss", "ppl", "bpb", "tok/s",
            "norm. entropy", "distance", "eff. heads", "removable <1%", "max imp.", "overlap"]
    everyone = [r for rs in by_h.values() for r in rs]
    tcols = ["n_" + t.replace("-", "_") for t in TYPES]
    tcols += sorted({k for r in everyone for k in r if k.startswith("n_")} - set(tcols))
    body, types = [], []
    for H, rs in sorted(by_h.items()):
        col = lambda k: [r.get(k) for r in rs]  # noqa: E731
        rem = pm(col("removable_heads_1pct"), 1)
        body.append([str(H), str(rs[0]["D"]), str(H * rs[0]["D"]), "%.3fM" % (
            num(rs[0]["params"]) / 1e6), str(len(rs))] + [pm(col(k), n) for k, n in (
                ("val_loss", 4), ("ppl", 3), ("bpb", 3), ("tok_s", 0), ("heads_mean_entropy", 2),
                ("heads_mean_distance", 1), ("effective_heads", 1))] + [
            rem + (" / %d" % (H * L) if rem != "–" else ""), pm(col("max_importance"), 3),
            pm(col("compromise_overlap"), 2)])
        types.append([str(H)] + [pm([r.get(c, 0) for r in rs], 1) for c in tcols])
    thead = ["H"] + [c[2:].replace("_", "-") for c in tcols]
    return (head, body), (thead, types)


def rel_values(rs, rel, field):
    return [num(r["relations"].get(rel, {}).get(field)) for r in rs]


def relations_of(rows):
    """The relations some run's summary.json scored (rows > 0 or a finite attention),
    in summary.json's order."""
    names = dict.fromkeys(k for r in rows for k in r["relations"])
    return [k for k in names if any(math.isfinite(x) and x > 0 for x in rel_values(
        rows, k, "attention")) or any(num(r["relations"].get(k, {}).get("rows")) > 0
                                      for r in rows)]


def is_ratio(rows, rel):
    """Whether relation rel's loss is read as its copy loss ratio: summary.json gives
    a "loss_ratio" for the relations whose token repeats an earlier one."""
    return any("loss_ratio" in r["relations"].get(rel, {}) for r in rows)


def relations_table(by_h):
    """Per H: each relation's best-head attention (mean ± s.d. over seeds; the uniform
    baseline, the same val rows for every run, in the header) and its loss (the copy
    loss ratio for a relation whose summary.json gives one: is_ratio)."""
    everyone = [r for rs in by_h.values() for r in rs]
    rels, head = relations_of(everyone), ["H"]
    for k in rels:
        u = mean_sd(rel_values(everyone, k, "uniform"))[0]
        head += ["%s attn.%s" % (k, " (uniform %.3f)" % u if math.isfinite(u) else ""),
                 "%s %s" % (k, "loss ratio" if is_ratio(everyone, k) else "loss")]
    body = [[str(H)] + [c for k in rels for c in (
        pm(rel_values(rs, k, "attention"), 3),
        pm(rel_values(rs, k, "loss_ratio" if is_ratio(everyone, k) else "loss"), 3))]
        for H, rs in sorted(by_h.items())]
    return head, body if rels else []


def beyond_noise(a, b):
    """(mean(a) - mean(b), the t·s.e. margin) with the two groups' pooled s.d., or
    None when either has fewer than two values (no estimate of the spread)."""
    (ma, sa, na), (mb, sb, nb) = mean_sd(a), mean_sd(b)
    if na < 2 or nb < 2:
        return None
    sp = math.sqrt(((na - 1) * sa * sa + (nb - 1) * sb * sb) / (na + nb - 2))
    t = T_CRIT[max(k for k in T_CRIT if k <= na + nb - 2)]
    return ma - mb, t * sp * math.sqrt(1 / na + 1 / nb)


def hlist(hs):
    return ", ".join("H=%d" % H for H in hs)


def relation_findings(by_h):
    """Per relation: at which H every seed's best head clears its bar (summary.json's,
    else the one ./infer uses to type a head by it), where the attention is highest
    (and whether by more than the seed noise) and where its loss is lowest."""
    out = []
    for k in relations_of([r for rs in by_h.values() for r in rs]):
        bar = ablate_relations.bar_of(next(r["relations"][k] for rs in by_h.values() for r in rs
                                           if k in r["relations"]))
        att = {H: [x for x in rel_values(rs, k, "attention") if math.isfinite(x)]
               for H, rs in sorted(by_h.items())}
        att = {H: v for H, v in att.items() if v}
        if not att:
            continue
        every = [H for H, v in att.items() if min(v) > bar]
        some = [H for H, v in att.items() if max(v) > bar and H not in every]
        u = mean_sd(rel_values([r for rs in by_h.values() for r in rs], k, "uniform"))[0]
        ms = {H: mean_sd(v) for H, v in att.items()}
        if len(every) == len(att):
            s = "%s is learned by every H (best-head attention above %.2f in every seed" % (k, bar)
        elif not every and not some:
            s = "%s is learned by no H (best-head attention under %.2f in every seed" % (k, bar)
        else:
            s = "%s is learned in every seed at %s%s%s (bar %.2f" % (
                k, hlist(every) or "no H", "; in some seeds at %s" % hlist(some) if some
                else "", "; at no seed of %s" % hlist(h for h in att if h not in every + some)
                if len(every) + len(some) < len(att) else "", bar)
        s += "; uniform %.3f)" % u if math.isfinite(u) else ")"
        order = sorted(att, key=lambda H: -ms[H][0])
        best = order[0]
        s += ", highest at H=%d (%s)" % (best, pm(att[best], 3))
        if len(order) > 1:
            g = beyond_noise(att[best], att[order[1]])
            s += ", %s H=%d (%s)" % (
                "next" if g is None else "ahead of" if g[0] > g[1] else "within the seed "
                "noise of", order[1], pm(att[order[1]], 3))
        field = "loss_ratio" if is_ratio([r for rs in by_h.values() for r in rs], k) else "loss"
        loss = {H: [x for x in rel_values(rs, k, field) if math.isfinite(x)]
                for H, rs in by_h.items()}
        loss = {H: v for H, v in loss.items() if v}
        if len(loss) > 1:
            lo = min(loss, key=lambda H: mean_sd(loss[H])[0])
            hi = max(loss, key=lambda H: mean_sd(loss[H])[0])
            s += "" if lo == hi else "; its %s is lowest at H=%d (%s) and highest at H=%d (%s)" % (
                "copy loss ratio" if field == "loss_ratio" else "loss", lo, pm(loss[lo], 3),
                hi, pm(loss[hi], 3))
        out.append(s + ".")
    everyone = [r for rs in by_h.values() for r in rs]
    empty = [k for k in dict.fromkeys(k for r in everyone for k in r["relations"])
             if k not in relations_of(everyone)]
    if empty:
        out.append("%s: no rows in the validation text, so %s out of the table." % (
            ", ".join(empty), "it is left" if len(empty) == 1 else "they are left"))
    return out


def induction_table(by_h):
    """Per H: seeds that formed an induction head (induction_phase.py's criterion), the
    phase-change step over those seeds, the final copy loss ratio and best layer>=1
    repeat score over all seeds, the val loss."""
    head = ["H", "D", "H·D", "formed", "phase-change step, median (range)",
            "copy loss ratio, median (range)", "final best repeat, median (range)",
            "val loss"]
    body = []
    for H, rs in sorted(by_h.items()):
        judged = [r for r in rs if "induction_formed" in r]
        formed = [r for r in judged if r["induction_formed"]]
        body.append([str(H), str(rs[0]["D"]), str(H * rs[0]["D"]), "%d/%d" % (
            len(formed), len(judged)), spread([r["induction_phase_step"] for r in formed], 0),
            spread([r.get("copy_loss_ratio") for r in rs], 3),
            spread([r.get("induction_final_repeat") for r in judged], 3),
            pm([r["val_loss"] for r in rs], 4)])
    return head, body


def inline(values, digits):
    """spread() for a sentence: "1650, 1500–1850"."""
    return spread(values, digits).replace(" (", ", ").rstrip(")")


def seeds(n):
    return "%d seed%s" % (n, "" if n == 1 else "s")


def induction_findings(by_h):
    """One sentence per H from the induction table's numbers, and how many of the seeds
    without an induction head copy all the same (copy loss ratio under COPIES_BELOW:
    the loss falls on repeats although no single layer>=1 head reaches the bar)."""
    out = []
    for H, rs in sorted(by_h.items()):
        judged = [r for r in rs if "induction_formed" in r]
        formed = [r for r in judged if r["induction_formed"]]
        ratio = inline([r.get("copy_loss_ratio") for r in rs], 3)
        if not judged:
            out.append("H=%d: no run has per-head repeat scores to judge." % H)
            continue
        if formed:
            s = "H=%d (D=%d) formed an induction head in %d of %s (phase change at step %s; " \
                "copy loss ratio %s" % (H, rs[0]["D"], len(formed), seeds(len(judged)), inline(
                    [r["induction_phase_step"] for r in formed], 0), ratio)
        else:
            s = "H=%d (D=%d) formed none in %s (final best layer>=1 repeat score %s, under " \
                "the %.2f bar; copy loss ratio %s" % (H, rs[0]["D"], seeds(len(judged)), inline(
                    [r["induction_final_repeat"] for r in judged], 3),
                    induction_phase.THRESHOLD, ratio)
        copying = [r for r in judged if not r["induction_formed"]
                   and num(r.get("copy_loss_ratio")) < COPIES_BELOW]
        if copying:
            s += "; %d of the %s without one still cop%s, ratio under %.1f" % (
                len(copying), seeds(len(judged) - len(formed)),
                "ies" if len(copying) == 1 else "y", COPIES_BELOW)
        out.append(s + ").")
    return out


def findings(arm, by_h, fp):
    """Sentences generated from the numbers of one arm; conservative by design."""
    unit = loss_unit(fp)
    st = {H: mean_sd([r["val_loss"] for r in rs]) for H, rs in by_h.items()}
    best = min(st, key=lambda H: st[H][0])
    bm, bs, bn = st[best]
    if len(st) == 1:
        return ["Only H=%d has finished runs (val loss %.4f)." % (best, bm)]
    out = ["Lowest mean val loss: H=%d, %.4f %s (%s, n=%d)." %
           (best, bm, unit, "s.d. %.4f" % bs if bn > 1 else "one seed", bn)]
    if min(s[2] for s in st.values()) < 2:
        out.append("With one seed for some H there is no estimate of seed-to-seed spread, so "
                   "this ordering (%s) is not evidence of a real difference." % ", ".join(
                       "H=%d %.4f" % (H, st[H][0]) for H in sorted(st, key=lambda h: st[h][0])))
    else:
        df = sum(n - 1 for _, _, n in st.values())
        sp = math.sqrt(sum((n - 1) * s * s for _, s, n in st.values()) / df)
        t = T_CRIT[max(k for k in T_CRIT if k <= df)]
        gaps = [(H, st[H][0] - bm, t * sp * math.sqrt(1 / bn + 1 / st[H][2]))
                for H in sorted(st) if H != best]
        say = lambda g: ", ".join("H=%d (+%.4f, margin %.4f)" % x for x in g)  # noqa: E731
        clear, noise = [g for g in gaps if g[1] > g[2]], [g for g in gaps if g[1] <= g[2]]
        out.append("Pooled seed s.d. %.4f %s (df=%d); a gap counts as real when it exceeds "
                   "t·s.e. (two-sided 5%%, t=%.2f, no correction for multiple comparisons)."
                   % (sp, unit, df, t))
        if clear:
            out.append("Worse than H=%d by more than the seed noise: %s." % (best, say(clear)))
        if noise:
            out.append("Within seed noise of H=%d: %s; these runs do not separate them, which "
                       "is not evidence that they are equal." % (best, say(noise)))
    if arm.startswith("headsize"):
        out.append("In this arm the parameter count grows with H (%s), so a gain mixes more "
                   "heads with more attention parameters." % " → ".join(
                       "%.3fM" % (num(by_h[H][0]["params"]) / 1e6) for H in sorted(by_h)))
    else:
        out.append("In this arm every H has the same parameter count; only the split of C=%d "
                   "into heads changes." % fp["embd"])
    rem = {H: mean_sd([r["removable_heads_1pct"] for r in rs]) for H, rs in by_h.items()}
    if any(s[2] for s in rem.values()):
        out.append("Heads whose removal alone costs under 1%% of the loss (mean over seeds): "
                   "%s." % ", ".join("H=%d: %.1f of %d" % (H, s[0], H * by_h[H][0]["L"])
                                     for H, s in sorted(rem.items()) if s[2]))
    return out


def describe(sweep):
    fp = sweep["fingerprint"]
    data = "%s (%s%s bytes" % (fp["data"], "first " if fp["data_slice"] else "", "{:,}".format(
        fp["data_bytes"])) if fp["data"] else "the built-in induction task (--corpus " \
        "induction, docs/induction.md" if is_induction(sweep) else "the built-in corpus " \
        "(1,000,000 bytes"
    return ("Data: %s, last %g held out for validation). L=%s, C=%d, T=%d, B=%d, %d "
            "steps (%s tokens per run); fixed head size D=%d in the head-size arm; seeds %s."
            % (data, fp["val_frac"], ", ".join(map(str, depths(sweep))), fp["embd"], fp["block"], fp["batch"],
               fp["steps"], "{:,}".format(fp["steps"] * fp["batch"] * fp["block"]),
               fp["fixed_head_size"], ", ".join(map(str, sweep["seeds"]))))


INDUCTION_INTRO = ("Induction heads: a run formed one when the best repeat score of any "
                   "layer>=1 head (--heads-every %d) reaches %.2f and stays there for three "
                   "logged steps (the phase change: the first of them) and at the end "
                   "(scripts/induction_phase.py, docs/induction.md). Phase-change steps are over "
                   "the seeds that formed a head; the copy loss ratio (loss on repeated letters "
                   "/ loss on first occurrences, train's final line) and the final best repeat "
                   "score over all seeds; val loss mean ± s.d.")
RELATIONS_INTRO = ("Relations (./infer --heads on the validation split, docs/heads.md): per "
                   "relation the best head's mean attention on the related key, mean ± s.d. "
                   "over seeds, with the uniform head's score in the header, and the loss "
                   "(%s) on the tokens the relation predicts; for %s (summary.json gives "
                   "their loss_ratio) the copy loss ratio instead. \"Learned\" below means the best head reaches the "
                   "relation's bar, summary.json's \"bar\".")
INTRO = ("Cells are mean ± sample standard deviation over seeds. val loss is the mean "
         "cross-entropy over the whole validation split in %s; ppl = e^loss, the perplexity "
         "per %s; bpb = bits per byte (docs/tokenizer.md), the headline, comparable across "
         "vocabularies (loss / ln 2 for a byte-level model). tok/s is training throughput "
         "(depends on --jobs/--threads and machine load). Heads columns come from `./infer "
         "--heads` on the validation split: mean normalised attention entropy (0 = one key, "
         "1 = uniform over the row's keys), mean attention distance (tokens), effective "
         "number of heads, heads whose removal alone raises the loss by under 1%%, and the "
         "largest single-head importance (loss increase in %s).")


# The captions the tables follow; check() finds the tables by them.
INDUCTION_TABLE = "Induction heads per H:"
RELATIONS_TABLE = "Relations per H:"


def heads_every(sweep):
    args = sweep.get("log_args", [])
    return int(args[args.index("--heads-every") + 1]) if "--heads-every" in args else 0


def arm_title(arm, fp, L):
    """An arm's title at depth L, as the sections and figures name it."""
    return ARMS[arm].replace("C fixed", "C = %d" % fp["embd"]).replace(
        "D fixed", "D = %d" % fp["fixed_head_size"]) + ", L = %d" % L


def write_md(path, sweep, rows, gates=()):
    """ablation.md: per arm its tables and the sentences generated from them."""
    md = lambda h, b: "\n".join(["| " + " | ".join(h) + " |", "|" + "|".join(  # noqa: E731
        "---" for _ in h) + "|"] + ["| " + " | ".join(r) + " |" for r in b])
    fp = sweep["fingerprint"]
    unit = loss_unit(fp)
    out = ["# Head-count ablation", ""] + ablate_page.answer_md(answer(sweep, rows),
                                                                 sweep.get("mode") == "quick") + [
        "Figures and every run's heads report: index.html.", "", describe(sweep), "",
        INTRO % (unit, unit.split()[-1], unit), ""]
    if is_induction(sweep):
        out += [INDUCTION_INTRO % (heads_every(sweep), induction_phase.THRESHOLD), ""]
    if any(relations_of([r]) for r in rows):
        ratio = [k for k in relations_of(rows) if is_ratio(rows, k)]
        out += [RELATIONS_INTRO % (unit, " and ".join(
            [", ".join(ratio[:-1]), ratio[-1]] if len(ratio) > 1 else ratio) or "none"), ""]
    said, titles = ablate_legend.Once(), parts(sweep)
    for arm, title in titles.items():
        by_h = {}
        for r in (r for r in rows if r["arm"] == arm):
            by_h.setdefault(r["H"], []).append(r)
        if not by_h:
            continue
        t1, t2 = tables(by_h, next(iter(by_h.values()))[0]["L"])
        key = said.md
        out += ["## Arm: %s" % title, "", md(*t1), ""] + key(t1[0], unit)
        out += ["Head types (mean count per model over seeds):", "", md(*t2), ""] + key(
            t2[0], unit)
        if is_induction(sweep):
            t4 = induction_table(by_h)
            out += [INDUCTION_TABLE, "", md(*t4), ""] + key(t4[0], unit) + [
                " ".join(induction_findings(by_h)), ""]
        t3 = relations_table(by_h)
        out += [RELATIONS_TABLE, "", md(*t3), ""] + key(t3[0], unit) + [
            " ".join(relation_findings(by_h)), ""] if t3[1] else []
        out += [" ".join(findings(arm, by_h, fp)), ""]
    out += ablate_relations.section(rows, relations_of(rows), list(titles), titles, unit)
    out += ablate_gates.md_lines(gates, list(titles), titles, fp["layers"])
    out += ["Plots: plots/val_loss.svg, plots/curves_*.svg%s%s; per-run files: runs/NAME/." % (
        ", plots/repeat.svg" if is_induction(sweep) else "",
        ", plots/relations_*.svg" if relations_of(rows) else ""), ""]
    cli.write_file(path, "\n".join(out))


def part_colors(titles):
    """A colour per section: the arms' own at train's depth, the palette's for others."""
    return {k: ARM_COLORS.get(k) or PALETTE[(i + 2) % len(PALETTE)]
            for i, k in enumerate(titles)}


def val_loss_plot(rows, sweep):
    """Bits per byte against H (log scale): every seed faint, the mean ± 1 s.d. per arm.
    Two panels: the left axis starts at zero (the differences at their true size); the
    right one zooms in on the data, its axis drawn broken (a zigzag and "axis broken")
    so that a small spread does not read as a cliff."""
    svg = Svg(1000, 480, "Bits per byte vs number of heads")
    heads = sorted({r["H"] for r in rows})
    titles = parts(sweep)
    colors = part_colors(titles)
    arms = [a for a in titles if any(r["arm"] == a for r in rows)]
    vals = {(a, H): [num(r["bpb"]) for r in rows if (r["arm"], r["H"]) == (a, H)]
            for a in arms for H in heads}
    st = {k: mean_sd(v) for k, v in vals.items() if v}
    ys = [y for v in vals.values() for y in v] + [m + d * s for m, s, _ in st.values()
                                                  for d in (-1, 1) if math.isfinite(s)]
    xlim = (math.log2(heads[0]) - 0.5, math.log2(heads[-1]) + 0.5)
    xticks = [(math.log2(H), str(H)) for H in heads]
    zoom = padded(min(ys), max(ys), 0.08)
    for i, (ylim, title) in enumerate((
            ((0.0, padded(0.0, max(ys), 0.05)[1]), "Axis from zero"),
            (zoom, "Zoomed in: axis broken, starts at %s" % fmt(zoom[0])))):
        ax = Axes(svg, 80 + i * 470, 64, 380, 320, xlim, ylim, xlabel="heads per layer H "
                  "(log scale)", title=title, ylabel="validation bits per byte" if i == 0
                  else "", xticks=xticks)
        if i == 1:  # the break mark: a zigzag across the foot of the y axis
            x0, y0 = ax.x, ax.y + ax.h
            svg.add('<polyline fill="#fff" stroke="#222" stroke-width="1.5" points="%.1f,%.1f '
                    '%.1f,%.1f %.1f,%.1f %.1f,%.1f"/>' % (x0 - 7, y0 - 8, x0 + 7, y0 - 13,
                                                          x0 - 7, y0 - 18, x0 + 7, y0 - 23))
            svg.text(x0 + 12, y0 - 12, "axis broken", size=10, fill="#a00")
        for k, arm in enumerate(arms):
            c, pts = colors[arm], []
            for H in heads:
                x = math.log2(H) + (k - 0.5) * 0.05
                for y in vals[arm, H]:
                    ax.point(x, y, c, r=2.5, opacity=0.35)
                if (arm, H) in st:
                    m, sd, n = st[arm, H]
                    ax.errorbar(x, m, sd, c)
                    ax.point(x, m, c, r=4.5, stroke="#fff", tip="%s H=%d: %.4f bits per byte "
                             "(n=%d)" % (arm, H, m, n))
                    pts.append((x, m))
            ax.polyline([x for x, _ in pts], [y for _, y in pts], c, width=2)
    svg.text(20, 24, "Validation bits per byte vs heads per layer (mean ± 1 s.d. over seeds)",
             size=14, weight="bold")
    legend(svg, 80, 432, [(titles[a], colors[a], "line") for a in arms])
    return svg


def compromise_plot(rows, sweep):
    """The compromise measure's mean overlap against H (log scale), one line per arm
    and depth: mean ± 1 s.d. over seeds, every seed a faint dot. None without it."""
    titles = parts(sweep)
    colors = part_colors(titles)
    arms = [a for a in titles if any(r["arm"] == a and math.isfinite(num(
        r.get("compromise_overlap"))) for r in rows)]
    if not arms:
        return None
    heads = sorted({r["H"] for r in rows})
    svg = Svg(640, 470, "Compromise: mean overlap vs number of heads")
    ax = Axes(svg, 80, 64, 500, 300, (math.log2(heads[0]) - 0.5, math.log2(heads[-1]) + 0.5),
              (0.0, 1.0), xlabel="heads per layer H (log scale)", ylabel="mean overlap",
              xticks=[(math.log2(H), str(H)) for H in heads])
    for k, arm in enumerate(arms):
        pts = []
        for H in heads:
            v = [y for y in (num(r.get("compromise_overlap")) for r in rows
                             if (r["arm"], r["H"]) == (arm, H)) if math.isfinite(y)]
            x = math.log2(H) + (k - (len(arms) - 1) / 2) * 0.04
            for y in v:
                ax.point(x, y, colors[arm], r=2.5, opacity=0.35)
            if v:
                m, sd, n = mean_sd(v)
                ax.errorbar(x, m, sd, colors[arm])
                ax.point(x, m, colors[arm], r=4.5, stroke="#fff", tip="%s H=%d: overlap %.3f "
                         "(n=%d)" % (titles[arm], H, m, n))
                pts.append((x, m))
        ax.polyline([x for x, _ in pts], [y for _, y in pts], colors[arm], width=2)
    svg.text(20, 24, "Compromise: how much the heads that hold one relation's key also hold "
             "another's", size=14, weight="bold")
    svg.text(20, 44, "1: one head spreads its weight over both keys; 0: each key has heads of "
             "its own (docs/heads.md)", size=11)
    legend(svg, 80, 414, [(titles[a], colors[a], "line") for a in arms])
    return svg


def repeat_plot(rows, runs, sweep):
    """The phase change: the best layer>=1 repeat score against step, one line per run,
    coloured by H, one panel per arm; the formed-head bar dashed."""
    titles = parts(sweep)
    arms = [a for a in titles if any(r["arm"] == a for r in rows)]
    heads = sorted({r["H"] for r in rows})
    color = {H: PALETTE[i % len(PALETTE)] for i, H in enumerate(heads)}
    pw, ph, gap = 380, 260, 70
    right = 70 + len(arms) * pw + (len(arms) - 1) * gap  # the legend goes right of the panels
    svg = Svg(right + 100, ph + 100, "Induction heads: best repeat score vs step")
    steps = sweep["fingerprint"]["steps"]
    for i, arm in enumerate(arms):
        ax = Axes(svg, 70 + i * (pw + gap), 40, pw, ph, (0, steps), (0, 1),
                  title=titles[arm].split(" (")[0] + titles[arm].split(")")[-1],
                  xlabel="step",
                  ylabel="best layer>=1 repeat score" if i == 0 else "")
        ax.hline(induction_phase.THRESHOLD, label="formed: %.2f" % induction_phase.THRESHOLD)
        for r in (r for r in rows if r["arm"] == arm):
            series = induction_phase.best_series(induction_phase.read_log(
                os.path.join(runs[r["run"]]["dir"], "run.jsonl"))[1])
            ax.polyline([x[0] for x in series], [x[1] for x in series], color[r["H"]],
                        width=1.3, opacity=0.8, tip="H=%d D=%d seed %d" % (
                            r["H"], r["D"], r["seed"]))
    legend(svg, right + 15, 40, [("H=%d" % H, color[H], "line") for H in heads])
    return svg


def write_plots(outdir, sweep, rows, runs):
    """plots/val_loss.svg, and each arm's learning curves drawn by plot_log.py (none
    before a run has finished); for an induction sweep plots/repeat.svg."""
    if not rows:
        return
    os.makedirs(os.path.join(outdir, "plots"), exist_ok=True)
    cli.write_file(os.path.join(outdir, "plots", "val_loss.svg"),
                   val_loss_plot(rows, sweep).render())
    comp = compromise_plot(rows, sweep)
    if comp:
        cli.write_file(os.path.join(outdir, "plots", "compromise.svg"), comp.render())
    if is_induction(sweep):
        cli.write_file(os.path.join(outdir, "plots", "repeat.svg"),
                   repeat_plot(rows, runs, sweep).render())
    titles = parts(sweep)
    for arm in titles:
        mine = [r for r in rows if r["arm"] == arm]
        if mine:
            logs = [plot_log.load(os.path.join(runs[r["run"]]["dir"], "run.jsonl")) for r in mine]
            svg = plot_log.loss_plot(logs, ["H=%d D=%d s%d" % (r["H"], r["D"], r["seed"])
                                            for r in mine])
            cli.write_file(os.path.join(outdir, "plots", "curves_%s.svg" % arm), svg.render())
    ablate_relations.write_plots(os.path.join(outdir, "plots"), rows, relations_of(rows),
                                 list(titles), titles)


def answer(sweep, rows):
    """The short answer's (arm title, sentences), per arm with rows (ablate_page.py)."""
    titles = parts(sweep)
    return ablate_page.answer(sweep, rows, list(titles), titles, relations_of(rows),
                              beyond_noise)


def write_all(outdir):
    sweep, runs = load(outdir)
    rows = table_rows(sweep, runs)
    gated = table_rows(sweep, runs, gated=True)
    names = relations_of(rows)
    if names:
        ablate_relations.annotate(rows, names)
        ablate_relations.write_csv(os.path.join(outdir, "relations.csv"), rows, names)
    gates = ablate_gates.compare_all(gated, rows, names)
    if sweep.get("gates"):
        ablate_gates.write_csv(os.path.join(outdir, ablate_gates.CSV), gates)
    write_csv(os.path.join(outdir, "ablation.csv"), rows)
    write_md(os.path.join(outdir, "ablation.md"), sweep, rows, gates)
    write_plots(outdir, sweep, rows, runs)
    titles = parts(sweep)
    cli.write_file(os.path.join(outdir, ablate_page.PAGE), ablate_page.page(
        outdir, describe(sweep), answer(sweep, rows), rows, gated, list(titles), titles,
        loss_unit(sweep["fingerprint"]), ablate_gates.html_part(
            gates, list(titles), titles, sweep["fingerprint"]["layers"]),
        quick=sweep.get("mode") == "quick"))
    return len(rows)


def table_after(text, caption):
    """The first cells (H) of the rows of the table that follows `caption` in text;
    None when the caption is absent."""
    if caption not in text:
        return None
    table = []
    for line in text.split(caption, 1)[1].lstrip("\n").split("\n"):
        if not line.startswith("|"):
            break
        table.append(line)
    return [line.split("|")[1].strip() for line in table[2:]]


def check(outdir):
    """--check: a finished run with heads/summary.json for every (arm, H, seed), a CSV row
    for each with finite numbers, ablation.md and index.html opening with the short
    answer, one md table row per arm and H, the relations section
    when there are relations (ablate_relations.check), with gated runs each of them
    finished and the gate section (ablate_gates.check), plots that parse as XML.
    Changes nothing; returns the problems found."""
    sweep, every = load(outdir)
    runs = {k: r for k, r in every.items() if not r.get("gate")}  # the gated: below
    problems = ["run %s: %s" % (r["name"], unfinished(outdir, r) or "no heads/summary.json")
                for r in runs_of(sweep) if not runs.get(r["name"], {}).get("summary")]
    path, md = (os.path.join(outdir, f) for f in ("ablation.csv", "ablation.md"))
    rows = read_csv(path) if os.path.exists(path) else []
    want = {(arm, r["H"], r["seed"]) for r in runs_of(sweep) for arm in r["arms"]}
    problems += ["ablation.csv: no row for arm %s, H=%d, seed %d" % k
                 for k in sorted(want - {(r["arm"], int(r["H"]), int(r["seed"])) for r in rows})]
    problems += ["ablation.csv line %d: %s = '%s' is not a number" % (i, c, r.get(c))
                 for i, r in enumerate(rows, 2) for c in ("val_loss", "ppl", "params", "tok_s",
                                                          "heads_mean_entropy")
                 if not math.isfinite(num(r.get(c)))]
    text = read_text(md) if os.path.exists(md) else ""
    quick = sweep.get("mode") == "quick"
    opening = ablate_page.QUICK_ANSWER if quick else ablate_page.ANSWER
    if text and opening not in "\n".join(text.split("\n")[:3]):
        problems.append("ablation.md: does not open with '%s'" % opening)
    page = os.path.join(outdir, ablate_page.PAGE)
    if "<h2>%s</h2>" % html.escape(opening[3:]) not in (
            read_text(page) if os.path.exists(page) else ""):
        problems.append("%s: no %s" % (ablate_page.PAGE, "pipeline-check warning" if quick
                                       else "short answer"))
    sections = text.split("\n## Arm: ") if text else []
    relations = any(relations_of([dict(relations=r["summary"].get("relations") or {})])
                    for r in runs.values())
    want_h = [str(H) for H in sweep["heads"]]
    titles = parts(sweep)
    for arm, title in titles.items():
        part = "".join(p for p in sections[1:] if p.startswith(title + "\n"))
        n = len(re.findall(r"^\| \d+ \| \d+ \| \d+ \| [\d.]+M \|", part, re.M))
        if n != len(sweep["heads"]):
            problems.append("ablation.md: arm %s: %d rows, expected %d" % (arm, n, len(
                sweep["heads"])))
        for caption, wanted in ((INDUCTION_TABLE, is_induction(sweep)),
                                (RELATIONS_TABLE, relations)):
            got = table_after(part, caption)
            if wanted and got != want_h:
                problems.append("ablation.md: arm %s: '%s' rows for H %s, expected %s" % (
                    arm, caption, got, want_h))
            elif not wanted and got:
                problems.append("ablation.md: arm %s: '%s' without its data" % (arm, caption))
    problems += ablate_relations.check(
        outdir, text, relations_of([dict(relations=r["summary"].get("relations") or {})
                                    for r in runs.values()]),
        list(titles), sorted(sweep["heads"]), len(want))
    want_gates = {}
    for r in gate_runs_of(sweep):
        for arm in r["arms"]:
            want_gates.setdefault(arm, []).append((r["H"], r["gate"]))
        if not every.get(r["name"], {}).get("summary"):
            problems.append("run %s: %s" % (r["name"], unfinished(outdir, r) or
                                            "no heads/summary.json"))
    problems += ablate_gates.check(outdir, text, want_gates, titles)
    plots = ["val_loss.svg"] + ["curves_%s.svg" % a for a in titles]
    for f in plots + (["repeat.svg"] if is_induction(sweep) else []):
        try:
            ET.parse(os.path.join(outdir, "plots", f))
        except (ET.ParseError, OSError) as e:
            problems.append("plots/%s: %s" % (f, e))
    return problems
