#!/usr/bin/env python3
"""ablate_report: turns the finished runs of a head-count sweep into ablation.csv,
ablation.md, SVG plots and index.html.

Reads DIR/sweep.json (written by ablate_sweep.py: the fixed settings, the arms,
head counts and seeds asked for) and, for every finished run, DIR/runs/NAME/
done.json (its scalar results), run.jsonl (train's log) and, when the heads
analysis ran, heads/summary.json and heads/heads.csv. Running the sweep and
checking the outputs are left to ablate_sweep.py and ablate_check.py; drawing
primitives to ablate_svg.py. Standard library only.

    python3 scripts/ablate_report.py DIR
"""
import csv
import json
import math
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ablate_plots  # noqa: E402

ARMS = {
    "width": "fixed width (C fixed, D = C/H)",
    "headsize": "fixed head size (D fixed, attention width H·D)",
}
# The head types of ./infer --heads, in the order of its summary.json; "masked"
# only appears for heads silenced with --mask.
TYPES = ["previous-token", "local", "induction", "first-position", "delimiter", "broad",
         "mixed", "masked"]
TYPE_COLS = ["n_" + t.replace("-", "_") for t in TYPES]
HEAD_COLS = (["heads_mean_entropy", "heads_mean_distance"] + TYPE_COLS +
             ["effective_heads", "removable_heads_1pct", "max_importance", "heads_base_loss"])
TEXT_COLS = ["arm", "run", "val_source", "heads_status", "heads_report"]
COLUMNS = (["arm", "run", "H", "D", "C", "attn_width", "params", "seed", "steps", "tokens",
            "val_loss", "ppl", "bpc", "val_tokens", "val_source", "train_loss", "tok_s",
            "train_seconds", "wall_seconds", "threads", "heads_status"] + HEAD_COLS +
           ["heads_report"])

# Two-sided 5% critical values of Student's t, by degrees of freedom.
T_CRIT = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
          9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000}


def t_crit(df):
    """The tabulated value at the largest df not above the given one (conservative)."""
    keys = [k for k in sorted(T_CRIT) if k <= df]
    return T_CRIT[keys[-1]] if keys else float("inf")


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_log(path):
    """train's --log: settings, steps, evals, final. A resumed run appends to the
    same file, so a step logged twice keeps its last record."""
    steps, evals, settings, final = {}, {}, None, None
    if not os.path.exists(path):
        return {"steps": [], "evals": [], "settings": None, "final": None}
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a line cut short by a hard kill
            kind = r.get("type")
            if kind == "step":
                steps[r["step"]] = r
            elif kind == "eval":
                evals[r["step"]] = r
            elif kind == "settings":
                settings = settings or r
            elif kind == "final":
                final = r
    return {"steps": [steps[k] for k in sorted(steps)],
            "evals": [evals[k] for k in sorted(evals)], "settings": settings, "final": final}


def num(v):
    """A float, or NaN for a missing or non-numeric value (JSON null included)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def read_importance(path, base_loss):
    """Per-head importance from heads.csv as % of the base loss, with the head type:
    [(pct, type)]. Uses delta_loss_pct, else delta_loss, else a column named
    *importance*; masked heads are left out."""
    if not os.path.exists(path):
        return []
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return []
    cols = rows[0].keys()
    out = []
    for r in rows:
        if str(r.get("masked", "0")).strip() not in ("0", "", "false"):
            continue
        if "delta_loss_pct" in cols:
            v = num(r["delta_loss_pct"])
        elif "delta_loss" in cols and base_loss and math.isfinite(base_loss):
            v = 100.0 * num(r["delta_loss"]) / base_loss
        else:
            key = next((c for c in cols if "importance" in c.lower()), None)
            v = num(r[key]) if key else float("nan")
        if math.isfinite(v):
            out.append((v, r.get("type", "")))
    return out


def load(outdir):
    """The sweep settings and every finished run: {name: run}."""
    sweep = read_json(os.path.join(outdir, "sweep.json"))
    runs = {}
    rundir = os.path.join(outdir, "runs")
    for name in sorted(os.listdir(rundir)) if os.path.isdir(rundir) else []:
        d = os.path.join(rundir, name)
        if name.endswith(".partial") or not os.path.exists(os.path.join(d, "done.json")):
            continue
        run = {"name": name, "dir": d, "done": read_json(os.path.join(d, "done.json")),
               "log": read_log(os.path.join(d, "run.jsonl")), "summary": None,
               "importance": []}
        if run["done"].get("heads_status") == "ok":
            s = os.path.join(d, "heads", "summary.json")
            if os.path.exists(s):
                run["summary"] = read_json(s)
                run["importance"] = read_importance(os.path.join(d, "heads", "heads.csv"),
                                                    num(run["summary"].get("base_loss")))
        runs[name] = run
    return sweep, runs


def arms_of(done, sweep):
    """The arms a run belongs to: width when H·D = C, headsize when D is the fixed
    head size (the H where both hold is one run shared by the two arms)."""
    fp, arms = sweep["fingerprint"], []
    if "width" in sweep["arms"] and done["H"] * done["D"] == fp["embd"]:
        arms.append("width")
    if "headsize" in sweep["arms"] and done["D"] == fp["fixed_head_size"]:
        arms.append("headsize")
    return arms


def heads_cells(summary):
    if not summary:
        return {c: "" for c in HEAD_COLS}
    tc = summary.get("type_counts") or {}
    cells = {"heads_mean_entropy": summary.get("mean_entropy"),
             "heads_mean_distance": summary.get("mean_distance"),
             "effective_heads": summary.get("effective_heads"),
             "removable_heads_1pct": summary.get("removable_heads_1pct"),
             "max_importance": summary.get("max_importance"),
             "heads_base_loss": summary.get("base_loss")}
    for t, col in zip(TYPES, TYPE_COLS):
        cells[col] = tc.get(t, 0)
    return {k: ("" if v is None else v) for k, v in cells.items()}


def table_rows(sweep, runs):
    """One row per (arm, run), ordered by arm, H, seed."""
    rows = []
    for run in runs.values():
        d = run["done"]
        if d["H"] not in sweep["heads"] or d["seed"] not in sweep["seeds"]:
            continue
        for arm in arms_of(d, sweep):
            row = {k: d.get(k, "") for k in COLUMNS}
            row.update(arm=arm, run=run["name"], attn_width=d["H"] * d["D"])
            row.update(heads_cells(run["summary"]))
            has_page = os.path.exists(os.path.join(run["dir"], "heads", "index.html"))
            row["heads_report"] = "runs/%s/heads/index.html" % run["name"] if has_page else ""
            rows.append(row)
    order = list(ARMS)
    rows.sort(key=lambda r: (order.index(r["arm"]), r["H"], r["seed"]))
    return rows


def cell(v):
    if isinstance(v, float):
        return "%.6g" % v
    return "" if v is None else str(v)


def write_csv(path, rows):
    with open(path + ".tmp", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([cell(r.get(c, "")) for c in COLUMNS])
    os.replace(path + ".tmp", path)


def mean_sd(values):
    v = [x for x in (num(y) for y in values) if math.isfinite(x)]
    if not v:
        return float("nan"), float("nan"), 0
    return statistics.fmean(v), (statistics.stdev(v) if len(v) > 1 else float("nan")), len(v)


def groups(rows):
    """{arm: {H: [rows]}} in table order."""
    g = {}
    for r in rows:
        g.setdefault(r["arm"], {}).setdefault(r["H"], []).append(r)
    return g


def pm(values, digits):
    """mean ± s.d. with `digits` decimals; one value alone, and whole if it is whole."""
    m, s, n = mean_sd(values)
    if n == 0:
        return "–"
    if n == 1 or not math.isfinite(s) or s == 0:   # one value, or all equal
        return "%d" % m if m == int(m) and digits <= 1 else "%.*f" % (digits, m)
    return "%.*f ± %.*f" % (digits, m, digits, s)


def summary_table(arm_rows, L):
    """The Vaswani-style table of one arm: header and rows of strings."""
    head = ["H", "D", "H·D", "params", "seeds", "val loss", "ppl", "bpc", "tok/s",
            "entropy", "distance", "eff. heads", "removable <1%", "max imp."]
    body = []
    for H, rs in sorted(arm_rows.items()):
        r0 = rs[0]
        col = lambda k: [r[k] for r in rs]  # noqa: E731
        removable = pm(col("removable_heads_1pct"), 1)
        if removable != "–":
            removable += " / %d" % (H * L)
        body.append([str(H), str(r0["D"]), str(H * r0["D"]), "%.3fM" % (num(r0["params"]) / 1e6),
                     str(len(rs)), pm(col("val_loss"), 4), pm(col("ppl"), 3), pm(col("bpc"), 3),
                     pm(col("tok_s"), 0), pm(col("heads_mean_entropy"), 2),
                     pm(col("heads_mean_distance"), 1), pm(col("effective_heads"), 1),
                     removable, pm(col("max_importance"), 3)])
    return head, body


def types_table(arm_rows):
    head = ["H"] + TYPES
    body = []
    for H, rs in sorted(arm_rows.items()):
        if not any(r["heads_status"] == "ok" for r in rs):
            continue
        body.append([str(H)] + [pm([r[c] for r in rs if r["heads_status"] == "ok"], 1)
                                for c in TYPE_COLS])
    return head, body


def findings(arm, arm_rows, fp):
    """Sentences generated from the numbers of one arm; conservative by design."""
    stats = {H: mean_sd([r["val_loss"] for r in rs]) for H, rs in arm_rows.items()}
    stats = {H: s for H, s in stats.items() if s[2] > 0}
    if not stats:
        return ["No finished runs yet."]
    out = []
    best = min(stats, key=lambda H: stats[H][0])
    bm, bs, bn = stats[best]
    if len(stats) == 1:
        return ["Only H=%d has finished runs (val loss %.4f)." % (best, bm)]
    out.append("Lowest mean val loss: H=%d, %.4f nats/byte (%s, n=%d)." %
               (best, bm, "s.d. %.4f" % bs if bn > 1 else "one seed", bn))
    if min(s[2] for s in stats.values()) < 2:
        order = ", ".join("H=%d %.4f" % (H, stats[H][0]) for H in sorted(stats, key=lambda h:
                                                                         stats[h][0]))
        out.append("With one seed for some H there is no estimate of seed-to-seed spread, so "
                   "this ordering (%s) is not evidence of a real difference." % order)
    else:
        df = sum(n - 1 for _, _, n in stats.values())
        sp = math.sqrt(sum((n - 1) * s * s for _, s, n in stats.values()) / df)
        t = t_crit(df)
        clear, noise = [], []
        for H in sorted(stats):
            if H == best:
                continue
            m, _, n = stats[H]
            margin = t * sp * math.sqrt(1 / bn + 1 / n)
            (clear if m - bm > margin else noise).append("H=%d (+%.4f, margin %.4f)"
                                                         % (H, m - bm, margin))
        out.append("Pooled seed s.d. %.4f nats (df=%d); a gap counts as real when it exceeds "
                   "t·s.e. (two-sided 5%%, t=%.2f, no correction for multiple comparisons)."
                   % (sp, df, t))
        if clear:
            out.append("Worse than H=%d by more than the seed noise: %s." %
                       (best, ", ".join(clear)))
        if noise:
            out.append("Within seed noise of H=%d: %s; these runs do not separate them, which "
                       "is not evidence that they are equal." % (best, ", ".join(noise)))
    if arm == "headsize":
        ps = sorted((H, num(rs[0]["params"])) for H, rs in arm_rows.items())
        out.append("In this arm the parameter count grows with H (%s), so a gain mixes more "
                   "heads with more attention parameters." %
                   " → ".join("%.3fM" % (p / 1e6) for _, p in ps))
    else:
        out.append("In this arm every H has the same parameter count; only the split of C=%d "
                   "into heads changes." % fp["embd"])
    heads = {H: mean_sd([r["removable_heads_1pct"] for r in rs if r["heads_status"] == "ok"])
             for H, rs in arm_rows.items()}
    heads = {H: s for H, s in heads.items() if s[2] > 0}
    if heads:
        out.append("Heads whose removal alone costs under 1%% of the loss (mean over seeds): "
                   "%s." % ", ".join("H=%d: %.1f of %d" % (H, s[0], H * fp["layers"])
                                     for H, s in sorted(heads.items())))
    return out


def md_table(head, body):
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def describe(sweep):
    fp = sweep["fingerprint"]
    if fp["data"]:
        data = "%s (%s%s bytes" % (fp["data"], "first " if fp.get("data_slice") else "",
                                   "{:,}".format(fp["data_bytes"]))
    else:
        data = "the built-in corpus (1,000,000 bytes"
    return ("Data: %s, last %g held out for validation). L=%d, C=%d, T=%d, B=%d, %d "
            "steps (%s tokens per run); fixed head size D=%d in the head-size arm; seeds %s."
            % (data, fp["val_frac"], fp["layers"], fp["embd"], fp["block"],
               fp["batch"], fp["steps"], "{:,}".format(fp["steps"] * fp["batch"] * fp["block"]),
               fp["fixed_head_size"], ", ".join(map(str, sweep["seeds"]))))


def sections(sweep, rows):
    """Per arm: title, summary table, types table and sentences (shared by md and html)."""
    g, fp = groups(rows), sweep["fingerprint"]
    for arm in ARMS:
        if arm in g:
            title = ARMS[arm].replace("C fixed", "C = %d" % fp["embd"]).replace(
                "D fixed", "D = %d" % fp["fixed_head_size"])
            yield (arm, title, summary_table(g[arm], fp["layers"]), types_table(g[arm]),
                   findings(arm, g[arm], fp))


def write_md(path, sweep, rows, notes):
    out = ["# Head-count ablation", "", describe(sweep), "",
           "Cells are mean ± sample standard deviation over seeds. val loss is the mean "
           "cross-entropy over the whole validation split (nats per byte); ppl = e^loss, "
           "bpc = loss / ln 2. tok/s is training throughput (depends on --jobs/--threads and "
           "machine load). Heads columns come from `./infer --heads` on the validation "
           "split: mean attention entropy (nats), mean attention distance (tokens), effective "
           "number of heads, heads whose removal alone raises the loss by under 1%, and the "
           "largest single-head importance (loss increase in nats).", ""]
    for note in notes:
        out += ["> " + note, ""]
    for arm, title, (h1, b1), (h2, b2), sentences in sections(sweep, rows):
        out += ["## Arm: %s" % title, "", md_table(h1, b1), ""]
        if b2:
            out += ["Head types (mean count per model over seeds):", "", md_table(h2, b2), ""]
        out += [" ".join(sentences), ""]
    out += ["Plots: plots/val_loss.svg, plots/curves_*.svg, plots/head_types.svg, "
            "plots/importance.svg; per-run files: runs/NAME/.", ""]
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    os.replace(path + ".tmp", path)


def html_escape(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def html_table(head, body):
    h = "".join("<th>%s</th>" % html_escape(c) for c in head)
    b = "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % html_escape(c) for c in r) for r in body)
    return "<table><thead><tr>%s</tr></thead><tbody>%s</tbody></table>" % (h, b)


def write_html(path, sweep, rows, runs, plots, notes):
    """index.html: well-formed XML (checked by ablate_check.py), no scripts."""
    e = html_escape
    p = ['<!DOCTYPE html>', '<html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head>',
         '<meta charset="utf-8"/><title>Head-count ablation</title>',
         '<style>body{font-family:sans-serif;max-width:1100px;margin:1em auto;color:#222}'
         'table{border-collapse:collapse;margin:.5em 0;font-size:13px}'
         'td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}'
         'th{background:#f2f2f2}.note{background:#fff7e0;padding:6px 10px}'
         'img{max-width:100%;border:1px solid #eee;margin:6px 0}</style></head><body>',
         '<h1>Head-count ablation</h1>', '<p>%s</p>' % e(describe(sweep)),
         '<p>Tables: <a href="ablation.md">ablation.md</a> · data: '
         '<a href="ablation.csv">ablation.csv</a></p>']
    for note in notes:
        p.append('<p class="note">%s</p>' % e(note))
    for arm, title, t1, t2, sentences in sections(sweep, rows):
        p.append("<h2>Arm: %s</h2>" % e(title))
        p.append(html_table(*t1))
        if t2[1]:
            p.append("<p>Head types (mean count per model over seeds):</p>" + html_table(*t2))
        p.append("<p>%s</p>" % e(" ".join(sentences)))
    p.append("<h2>Plots</h2>")
    for rel, caption in plots:
        p.append('<figure><img src="%s" alt="%s"/><figcaption>%s</figcaption></figure>'
                 % (e(rel), e(caption), e(caption)))
    p.append("<h2>Runs</h2><table><thead><tr><th>run</th><th>arms</th><th>val loss</th>"
             "<th>heads</th><th>files</th></tr></thead><tbody>")
    for name, run in runs.items():
        d = run["done"]
        rel = "runs/" + name
        files = ['<a href="%s/run.jsonl">log</a>' % e(rel),
                 '<a href="%s/train.err">train output</a>' % e(rel)]
        if os.path.exists(os.path.join(run["dir"], "heads", "index.html")):
            files.append('<a href="%s/heads/index.html">heads report</a>' % e(rel))
        p.append("<tr><td>%s</td><td>%s</td><td>%.4f</td><td>%s</td><td>%s</td></tr>"
                 % (e(name), e(", ".join(arms_of(d, sweep)) or "–"), num(d["val_loss"]),
                    e(d.get("heads_status", "")), " · ".join(files)))
    p.append("</tbody></table></body></html>")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(p) + "\n")
    os.replace(path + ".tmp", path)


def heads_notes(runs):
    """One line per distinct reason the heads analysis is missing."""
    reasons = sorted({r["done"].get("heads_status", "") for r in runs.values()} - {"ok", ""})
    return ["Heads analysis missing for some runs: %s" % r for r in reasons]


def write_all(outdir):
    sweep, runs = load(outdir)
    rows = table_rows(sweep, runs)
    notes = heads_notes(runs)
    write_csv(os.path.join(outdir, "ablation.csv"), rows)
    write_md(os.path.join(outdir, "ablation.md"), sweep, rows, notes)
    plots = ablate_plots.write_plots(os.path.join(outdir, "plots"), sweep, rows, runs)
    write_html(os.path.join(outdir, "index.html"), sweep, rows, runs, plots, notes)
    return len(rows)


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: python3 scripts/ablate_report.py DIR", file=sys.stderr)
        return 2
    n = write_all(argv[1])
    print("ablate_report: %d rows; wrote %s" % (n, os.path.join(argv[1], "index.html")),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
