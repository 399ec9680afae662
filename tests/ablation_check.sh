#!/usr/bin/env bash
# The head-count ablation pipeline end to end, on tiny settings (CI; well under a minute):
#   1. scripts/ablate.sh --quick runs, and --check finds every output well formed; its
#      compare page's text starts at a line of the validation text;
#   2. a second run skips every finished run and changes none of them;
#   3. a run into the same --out with other settings is refused (exit 2);
#   4. a sweep interrupted with SIGINT resumes from its checkpoint and finishes;
#   5. --print-jobs, its commands run by a plain loop, then --report-only, give the
#      same report as step 1 (timings aside);
#   6. the report reads summary.json: its numbers reach the table, and "relations"
#      (when ./infer writes them) get a table of their own, with generated sentences;
#   7. --corpus induction: train gets the induction task and logs per-head scores, the
#      report has an induction table and a relations table per arm with a row per H,
#      and --check notices when one is missing;
#   8. --corpus text: agreement and names (built-in corpus only) reach the relations table,
#      and the section "One head against several" has a row per relation, the served
#      count, relations.csv and the heads x relations matrix (plots/relations_width.svg);
#      index.html and ablation.md open with the warning that a --quick sweep only checks
#      the pipeline (no short answer), and the matrix fits 1,300 px
#      with upright relation names;
#   9. --vocab N: every train gets it (the sweep's settings hold it), and the bpb column is
#      each run's final val_bpb, below its val loss / ln 2 (tokens of several bytes); no
#      output calls its per-token losses "nats per byte".
#  10. without --data a sweep trains on the built-in corpus and names no file;
#  11. --head-gates LIST: a bad list is refused (exit 2); each plain run is trained once
#      more per LAMBDA > 0 with train's --head-gates, and the report's gate section,
#      gates.csv and index.html compare it with its plain run; on a copy with hand-set
#      gates and prune curve the numbers are the known ones (open heads, the overlap
#      with the heads the prune curve keeps last, a closed head serving nothing), and
#      --check notices a missing gate table; index.html links both compare pages.
#  12. --layers LIST: bad lists are refused (exit 2) before anything is written;
#      --print-jobs names a run of train's depth as before and one of another depth
#      L<L>-H..; the sweep trains each depth, the run of train's depth is bit for bit
#      the run of a sweep without --layers, the report has a section per (arm, L) and an
#      L column, a compare page per depth is written (and linked), no compare.html; a
#      sweep.json from before --layers still reports, checks and resumes;
#  13. a run whose done.json is junk, a directory or a FIFO, or whose model.ckpt is cut
#      short, is no finished run: --check names it (exit 1), and a rerun sets it aside
#      and trains it again;
#  14. --report-only and --check on a sweep.json whose step count is NaN: one line naming
#      the file, exit 1, and no file of the sweep rewritten.
#  15. --head-routing LIST: 0, a negative, a non-number, an empty list and the pair with
#      --head-gates are refused (one line, exit 2, nothing written); --print-jobs lists a
#      NAME-r1 job for each run with H > 1 and none for H = 1; the sweep trains them with
#      train's --head-routing 1 (its plain runs bit for bit those of a sweep without the
#      flag), a rerun skips them all, and the routing section of ablation.md, index.html
#      and routing.csv compare each with the plain runs of H = 1 and of its H (their
#      numbers from ablation.csv) and say once that K >= H is not trained; --check
#      notices a missing routing table; an interrupted routed run resumes.
# usage: tests/ablation_check.sh [BIN_DIR] [WORK_DIR]   (defaults: . and build/ablation-check)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.}
work=$(realpath -m "${2:-build/ablation-check}")
rm -rf "$work"
mkdir -p "$work"
export OMP_WAIT_POLICY=passive
fail() { echo "ablation_check: FAIL: $*" >&2; exit 1; }
step() { echo "ablation_check: $*" >&2; }
ablate() { scripts/ablate.sh --quick --bin "$bin" "$@"; }
# The plain sweeps (steps 1-5 and 9) train on tiny Shakespeare beside the checkout, named
# with --data as ablate.sh needs it; where it is missing, on the built-in corpus.
shakespeare=../shared/data/tinyshakespeare.txt
data=()
if [ -f "$shakespeare" ]; then data=(--data "$shakespeare"); else
    step "no $shakespeare: the plain sweeps train on the built-in corpus"; fi

step "1. quick sweep"
t0=$(date +%s)
ablate "${data[@]}" --out "$work/sweep" --threads 1 2>"$work/sweep.err" ||
    { cat "$work/sweep.err" >&2; fail "quick sweep exited $?"; }
step "   took $(( $(date +%s) - t0 )) s"
ablate --out "$work/sweep" --check || fail "outputs of the quick sweep"
# The compare page's text starts where a line of the validation text starts, not
# inside a word, and the page is written from it.
python3 - "$work/sweep" <<'EOF2' || fail "compare_text.txt does not start a line of val.txt"
import sys
d = sys.argv[1]
val, text = open(d + "/val.txt", "rb").read(), open(d + "/compare_text.txt", "rb").read()
assert text and val.endswith(text) and val[len(val) - len(text) - 1:][:1] == b"\n", text[:40]
assert "compare_text.txt" in open(d + "/compare.html", encoding="utf-8").read()
EOF2

step "2. rerun skips finished runs"
sums() { find "$work/sweep/runs" -name done.json -print0 | sort -z | xargs -0 sha256sum; }
before=$(sums)
ablate "${data[@]}" --out "$work/sweep" 2>"$work/rerun.err" || { cat "$work/rerun.err" >&2;
    fail "rerun exited $?"; }
grep -q "6 finished earlier, 0 to do" "$work/rerun.err" || { cat "$work/rerun.err" >&2;
    fail "rerun did not skip the 6 finished runs"; }
[ "$before" = "$(sums)" ] || fail "rerun changed finished runs"

step "3. other settings into the same --out are refused"
set +e
ablate "${data[@]}" --steps 31 --out "$work/sweep" 2>"$work/mismatch.err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "other settings (steps: 31 here, 30 there)" "$work/mismatch.err" ||
    { cat "$work/mismatch.err" >&2; fail "a mismatched rerun gave exit $rc"; }

step "4. an interrupted sweep resumes"
args=("${data[@]}" --steps 4000 --heads 1 --seeds 1 --arm width --jobs 1 --threads 1
      --out "$work/intr")
scripts/ablate.sh --quick --bin "$bin" "${args[@]}" 2>"$work/intr1.err" &  # $! is the driver
pid=$!
for _ in $(seq 100); do  # wait until training is under way (a step record is logged)
    grep -qs '"type":"step"' "$work"/intr/runs/*.partial/run.jsonl && break
    sleep 0.1
done
sleep 0.5
kill -INT $pid 2>/dev/null || true
set +e
wait $pid
rc=$?
set -e
if [ $rc -eq 130 ]; then
    ls "$work"/intr/runs/*.partial/model.ckpt >/dev/null || fail "no checkpoint after SIGINT"
    ablate "${args[@]}" 2>"$work/intr2.err" || { cat "$work/intr2.err" >&2;
        fail "resumed sweep exited $?"; }
    grep -q '"resume":true' "$work"/intr/runs/H01-D032-s1/run.jsonl ||
        fail "the second sweep did not resume the run"
else
    step "   (the run finished before the signal: exit $rc; resume not exercised)"
fi
ablate "${args[@]}" --check || fail "outputs of the resumed sweep"

step "5. --print-jobs, a plain loop, --report-only"
ablate "${data[@]}" --out "$work/jobs" --threads 1 --print-jobs >"$work/jobs.txt" \
    2>"$work/jobs.err" ||
    { cat "$work/jobs.err" >&2; fail "--print-jobs exited $?"; }
n=$(wc -l <"$work/jobs.txt")
[ "$n" -eq 6 ] || fail "--print-jobs: $n lines, 6 expected"
grep -qv "^python3 /" "$work/jobs.txt" && fail "a job without absolute paths: $(head -1 "$work/jobs.txt")"
(cd / && while read -r job; do bash -c "$job" 2>>"$work/jobs.err" || exit 1; done) \
    <"$work/jobs.txt" || { cat "$work/jobs.err" >&2; fail "a printed job failed"; }
ablate --out "$work/jobs" --report-only 2>>"$work/jobs.err"
ablate --out "$work/jobs" --check || fail "outputs of the printed jobs"
python3 - "$work/sweep" "$work/jobs" <<'EOF' || fail "--print-jobs gave another report"
import csv, re, sys
timing = {"tok_s", "train_seconds", "wall_seconds", "threads"}
rows = [[{k: v for k, v in r.items() if k not in timing} for r in
         csv.DictReader(open(d + "/ablation.csv"))] for d in sys.argv[1:]]
assert rows[0] == rows[1], "ablation.csv differs"
# The md tables too, with the tok/s column (the 9th) masked.
md = [re.sub(r"^((?:\| [^|]* ){8})\| [^|]* ", r"\1| - ", open(d + "/ablation.md").read(),
             flags=re.M) for d in sys.argv[1:]]
assert md[0] == md[1], "ablation.md differs"
EOF

step "6. the report reads summary.json, relations included"
cp -r "$work/sweep" "$work/rel"
python3 - "$work/rel" <<'EOF'
import glob, json, sys
for path in glob.glob(sys.argv[1] + "/runs/*/heads/summary.json"):
    s = json.load(open(path))
    s["relations"] = {"previous-token": {"best_head": "L0H0", "attention": 0.25 * s["heads"],
                                         "uniform": 0.1, "loss": 3.0, "rows": 100, "bar": 0.5},
                      "copy": {"best_head": None, "attention": None, "uniform": 0.1,
                               "bar": 0.3}}
    json.dump(s, open(path, "w"))
EOF
ablate --out "$work/rel" --report-only 2>/dev/null
ablate --out "$work/rel" --check || fail "outputs with relations"
python3 - "$work/sweep" "$work/rel" <<'EOF' || fail "summary.json's numbers in the report"
import csv, json, sys
plain, rel = sys.argv[1:]
for r in csv.DictReader(open(plain + "/ablation.csv")):
    s = json.load(open("%s/runs/%s/heads/summary.json" % (plain, r["run"])))
    assert float(r["heads_mean_entropy"]) == float("%.6g" % s["mean_entropy"]), r["run"]
    assert int(r["n_broad"]) == s["type_counts"]["broad"], r["run"]
# The relations table comes from summary.json alone: there when ./infer wrote
# relations (the built-in corpus gets them), and then with its numbers.
has = any("relations" in json.load(open(p)) for p in
          __import__("glob").glob(plain + "/runs/*/heads/summary.json"))
assert ("Relations per H:" in open(plain + "/ablation.md").read()) == has, \
    "the relations table does not follow summary.json"
# copy has no numbers, so no columns; previous-token has attention and loss.
md = open(rel + "/ablation.md").read()
assert "| H | previous-token attn. (uniform 0.100) | previous-token loss |\n|---|---|---|\n" \
    "| 1 | 0.250 | 3.000 |\n| 4 | 1.000 | 3.000 |" in md, "no relations table"
assert "previous-token is learned in every seed at H=4; at no seed of H=1 (bar 0.50; " \
    "uniform 0.100), highest at H=4 (1.000)" in md, "no sentence on the relation"
EOF

step "7. --corpus induction"
set +e
ablate --corpus induction --data README.md --out "$work/bad" 2>"$work/bad.err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "--corpus with --data gave exit $rc"
ablate --corpus induction --out "$work/ind" --threads 1 2>"$work/ind.err" ||
    { cat "$work/ind.err" >&2; fail "quick induction sweep exited $?"; }
ablate --out "$work/ind" --check || fail "outputs of the induction sweep"
python3 - "$work/ind" <<'EOF' || fail "the induction sweep's report"
import csv, glob, json, re, sys
import xml.etree.ElementTree as ET
d = sys.argv[1]
for log in glob.glob(d + "/runs/*/run.jsonl"):
    recs = [json.loads(line) for line in open(log)]
    assert recs[0]["type"] == "settings" and recs[0]["data"] == "<built-in induction corpus>", log
    assert any(r["type"] == "heads" for r in recs), log + ": no per-head scores"
rows = list(csv.DictReader(open(d + "/ablation.csv")))
assert len(rows) == 8 and all(r["induction_formed"] in ("0", "1") for r in rows), rows
md = open(d + "/ablation.md").read()
for arm in ("fixed width (C = 32", "fixed head size (D = 8"):
    part = md.split("## Arm: " + arm, 1)[1].split("## Arm:")[0]
    ind = part.split("Induction heads per H:\n\n", 1)[1].split("\n\n")[0].split("\n")
    assert ind[0].startswith("| H | D | H·D | formed | phase-change step"), ind[0]
    assert [re.match(r"\| (\d+) \| \d+ \| \d+ \| [0-2]/2 \|", x).group(1)
            for x in ind[2:]] == ["1", "4"], ind
    assert re.search(r"H=1 \(D=\d+\) formed (none in 2 seeds|an induction head in [12] of 2)",
                     part), "no induction sentence"
    rel = part.split("Relations per H:\n\n", 1)[1].split("\n\n")[0].split("\n")
    assert rel[0].startswith("| H | previous-token attn. (uniform ") and "copy loss ratio" \
        in rel[0], rel[0]
    assert [x.split("|")[1].strip() for x in rel[2:]] == ["1", "4"], rel
assert len(ET.parse(d + "/plots/repeat.svg").findall(".//{*}polyline")) == 8, "repeat.svg"
EOF
cp -r "$work/ind" "$work/ind-cut"
python3 - "$work/ind-cut/ablation.md" <<'EOF'
import sys
p = sys.argv[1]
text = open(p).read()  # read before open(p, "w") empties the file
open(p, "w").write(text.replace("Induction heads per H:", "(cut)", 1))
EOF
ablate --out "$work/ind-cut" --check 2>"$work/cut.err" && fail "--check missed a cut induction table"
grep -q "Induction heads per H:' rows for H None" "$work/cut.err" ||
    { cat "$work/cut.err" >&2; fail "--check did not name the missing table"; }
step "8. --corpus text: the built-in corpus' planted relations get columns too"
ablate --corpus text --heads 4 --seeds 1 --arm width --out "$work/text" --threads 1 \
    2>"$work/text.err" || { cat "$work/text.err" >&2; fail "quick text sweep exited $?"; }
ablate --out "$work/text" --check || fail "outputs of the text sweep"
head=$(grep -A2 "^Relations per H:" "$work/text/ablation.md" | tail -1)
for rel in "previous-token attn." "copy loss ratio" "agreement attn." "names loss ratio"; do
    case "$head" in *"$rel"*) ;; *) fail "relations table without '$rel': $head" ;; esac
done
python3 - "$work/text" <<'EOF' || fail "the section 'One head against several'"
import csv, glob, json, sys
import xml.etree.ElementTree as ET
d = sys.argv[1]
(summary,) = glob.glob(d + "/runs/*/heads/summary.json")
rels = [k for k, v in json.load(open(summary))["relations"].items() if v.get("rows")]
md = open(d + "/ablation.md").read()
part = md.split("## One head against several: the relations\n", 1)[1]
def table(caption):
    lines = part.split(caption + "\n\n", 1)[1].split("\n\n")[0].split("\n")
    return [[c.strip() for c in x.strip("|").split("|")] for x in lines[2:]]
assert [r[:3] for r in table("Relations by arm and H:")] == [[k, "width", "4"] for k in rels]
(served,) = table("Relations served per arm and H:")
assert served[:5] == ["width", "4", "8", "4", str(len(rels))], served
n = int(served[5])
assert 0 <= n <= len(rels) and ("At H = 4, %d of %d relations" % (n, len(rels)) if n else
                                "none of the %d relations has a" % len(rels)) in part, part
out = list(csv.DictReader(open(d + "/relations.csv")))
assert [r["relation"] for r in out] == rels, out
assert sum(int(r["served"]) for r in out) == n
svg = ET.parse(d + "/plots/relations_width.svg").getroot()
labels = {t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")}
assert {"L0H0", "L0H3"} <= labels and set(rels) <= labels, labels
assert int(svg.get("width")) <= 1300, svg.get("width")
# The caption's lines (size 11, from x = 20) fit the picture at about 6.2 px a character.
for t in svg.iter("{http://www.w3.org/2000/svg}text"):
    if t.get("font-size") == "11" and float(t.get("x")) == 20:
        assert 20 + 6.2 * len(t.text) <= int(svg.get("width")), (t.text, svg.get("width"))
assert all(t.get("transform") is None for t in svg.iter("{http://www.w3.org/2000/svg}text")
           if t.text in rels), "rotated relation names"
# A --quick sweep gives no short answer: it warns that it only checks the pipeline.
assert md.startswith("# Head-count ablation\n\n## No short answer: a pipeline check\n"), md[:200]
page = open(d + "/index.html").read()
assert "<h2>No short answer: a pipeline check</h2>" in page, page[:800]
assert "learn next to nothing" in page and "<h2>Short answer</h2>" not in page, page[:800]
assert "Bits per byte (validation" in page, page[:500]
(run,) = [x for x in glob.glob(d + "/runs/*") if __import__("os").path.isdir(x)]
assert 'href="runs/%s/heads/index.html"' % run.rsplit("/", 1)[1] in page, "no heads link"
EOF

step "9. --vocab: a byte-pair sweep reports bits per byte"
ablate "${data[@]}" --vocab 300 --heads 1 --seeds 1 --arm width --out "$work/vocab" --threads 1 \
    2>"$work/vocab.err" || { cat "$work/vocab.err" >&2; fail "quick --vocab sweep exited $?"; }
ablate --out "$work/vocab" --check || fail "outputs of the --vocab sweep"
python3 - "$work/vocab" <<'EOF'
import csv, json, math, sys
d = sys.argv[1]
assert json.load(open(d + "/sweep.json"))["fingerprint"]["vocab"] == 300
for row in csv.DictReader(open(d + "/ablation.csv")):
    log = [json.loads(x) for x in open(d + "/runs/%s/run.jsonl" % row["run"])]
    settings = next(x for x in log if x["type"] == "settings")
    final = next(x for x in log if x["type"] == "final")
    assert settings["vocab_asked"] == 300 and settings["merges"] > 0, settings
    assert abs(float(row["bpb"]) - final["val_bpb"]) < 1e-4, (row["bpb"], final)
    assert final["val_bpb"] < final["val_loss"] / math.log(2), final
import glob
for f in [d + "/ablation.md", d + "/index.html"] + glob.glob(d + "/plots/*.svg"):
    assert "nats per byte" not in open(f).read(), f + " says nats per byte"
assert "in nats per token" in open(d + "/ablation.md").read()
EOF

step "10. without --data: the built-in corpus, no file read"
ablate --heads 1 --seeds 1 --arm width --out "$work/nodata" --print-jobs >/dev/null \
    2>"$work/nodata.err" || { cat "$work/nodata.err" >&2; fail "--print-jobs without --data"; }
python3 - "$work/nodata/sweep.json" <<'EOF' || fail "a sweep without --data named a file"
import json, sys
s = json.load(open(sys.argv[1]))
fp = s["fingerprint"]
assert (fp["data"], fp["data_bytes"], s["train_data"]) == (None, None, None), (fp, s)
assert fp["corpus"] == "text" and "--corpus" in s["train_args"], (fp, s["train_args"])
EOF

step "11. --head-gates: the gate sweep"
for bad in "-1" "x" "0.1,nan"; do
    set +e
    ablate --head-gates "$bad" --out "$work/badgate" 2>"$work/badgate.err"
    rc=$?
    set -e
    [ $rc -eq 2 ] && grep -q "^ablate: error: --head-gates '$bad': expected numbers >= 0" \
        "$work/badgate.err" || { cat "$work/badgate.err" >&2; fail "--head-gates $bad: exit $rc"; }
    [ ! -e "$work/badgate" ] || fail "--head-gates $bad wrote $work/badgate"
done
ablate --corpus text --heads 4 --seeds 1 --arm width --head-gates 0,0.5 --out "$work/gates" \
    --threads 1 2>"$work/gates.err" || { cat "$work/gates.err" >&2; fail "gate sweep exited $?"; }
ablate --out "$work/gates" --check || fail "outputs of the gate sweep"
python3 - "$work/gates" <<'EOF2' || fail "the gate sweep's report"
import csv, json, sys
d = sys.argv[1]
log = [json.loads(x) for x in open(d + "/runs/H04-D008-s1-g0.5/run.jsonl")]
assert log[0]["head_gates"] == 0.5, log[0]
assert json.load(open(d + "/sweep.json"))["gates"] == [0.5]
(plain,) = csv.DictReader(open(d + "/ablation.csv"))  # the gated run is not a row of its own
(g,) = csv.DictReader(open(d + "/gates.csv"))
assert g["run"] == "H04-D008-s1-g0.5" and g["plain"] == "H04-D008-s1" and g["lambda"] == "0.5", g
assert g["plain_bpb"] == plain["bpb"] and g["heads"] == "4" and 0 <= int(g["open"]) <= 4, g
curve = json.load(open(d + "/runs/H04-D008-s1/heads/summary.json"))["prune_curve"]
assert len(curve) == 5 and int(g["overlap"]) <= int(g["open"]), (curve, g)
md = open(d + "/ablation.md").read()
assert "## Gate sweep: heads that close themselves" in md
assert "\n| 4 | 8 | 0.5 | 1 | %s of 4 | " % g["open"] in md, md
page = open(d + "/index.html").read()
for link in ("runs/H04-D008-s1-g0.5/heads/index.html", "compare.html", "compare_gates.html"):
    assert 'href="%s"' % link in page, link
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, "scripts")
import ablate_gates
for name, _ in ablate_gates.LEGEND:  # every column of the gate table has its legend line
    assert "<dt>%s</dt>" % name in page and "\n- %s: " % name in md, name
gates_page = open(d + "/compare_gates.html").read()
assert "H04-D008-s1/model.ckpt" in gates_page and "H04-D008-s1-g0.5/model.ckpt" in gates_page
EOF2
cp -r "$work/gates" "$work/gates-known"
python3 - "$work/gates-known" <<'EOF2'
import csv, json, sys
d = sys.argv[1] + "/runs/"
# The gated model: L0H1 and L0H3 closed; L0H1 has the best previous-token score and is
# marked needed for it, but a closed head serves nothing.
path = d + "H04-D008-s1-g0.5/heads/heads.csv"
rows = list(csv.DictReader(open(path)))
for r in rows:
    lab = "L%sH%s" % (r["layer"], r["head"])
    r["gate"] = "0" if lab in ("L0H1", "L0H3") else "0.9"
    r["previous-token"] = "0.9" if lab == "L0H1" else "0.01"
    r["needed"] = "previous-token" if lab == "L0H1" else ""
w = csv.DictWriter(open(path, "w", newline=""), fieldnames=list(rows[0]))
w.writeheader()
w.writerows(rows)
s = json.load(open(d + "H04-D008-s1-g0.5/heads/summary.json"))
s["relations"]["previous-token"].update(best_head="L0H1", attention=0.9)
s["base_loss"] = 2.5
json.dump(s, open(d + "H04-D008-s1-g0.5/heads/summary.json", "w"))
# The plain model's prune curve removes L0H3, L0H0, L0H2, L0H1: it keeps L0H2 and L0H1
# last, so one of the two open heads (L0H0, L0H2) is among them; pruned to two heads
# its loss is 3.
path = d + "H04-D008-s1/heads/summary.json"
s = json.load(open(path))
s["prune_curve"] = [{"removed": k, "head": h, "loss": float(k + 1)} for k, h in
                    enumerate([None, "L0H3", "L0H0", "L0H2", "L0H1"])]
json.dump(s, open(path, "w"))
EOF2
ablate --out "$work/gates-known" --report-only 2>/dev/null
ablate --out "$work/gates-known" --check || fail "outputs of the hand-set gate sweep"
python3 - "$work/gates-known" <<'EOF2' || fail "the gate report's known answers"
import csv, sys
d = sys.argv[1]
(g,) = csv.DictReader(open(d + "/gates.csv"))
want = {"open": "2", "open_heads": "L0H0 L0H2", "kept_last": "L0H2 L0H1", "overlap": "1",
        "chance_overlap": "1", "loss": "2.5", "pruned_loss": "3"}
assert {k: g[k] for k in want} == want, g
assert "previous-token" not in g["relations_served"].split(), g
md = open(d + "/ablation.md").read()
assert "| 2 of 4 | " in md and " | 1 of 2 (1) | 2.500 / 3.000 |" in md, md
EOF2
python3 - "$work/gates-known/ablation.md" <<'EOF2'
import sys
p = sys.argv[1]
text = open(p).read()  # read before open(p, "w") empties the file
open(p, "w").write(text.replace("Gated runs per arm, H and LAMBDA:", "(cut)", 1))
EOF2
ablate --out "$work/gates-known" --check 2>"$work/gcut.err" && fail "--check missed a cut gate table"
grep -q "'Gated runs per arm, H and LAMBDA:' rows \[\]" "$work/gcut.err" ||
    { cat "$work/gcut.err" >&2; fail "--check did not name the missing gate table"; }

step "12. --layers: depth as an axis"
for bad in 0 -1 x "" "1 99999"; do
    set +e
    ablate --layers "$bad" --out "$work/layers-bad" 2>"$work/lbad.err"
    rc=$?
    set -e
    [ $rc -eq 2 ] && [ "$(wc -l <"$work/lbad.err")" -eq 1 ] && [ ! -e "$work/layers-bad" ] ||
        { cat "$work/lbad.err" >&2; fail "--layers '$bad' gave exit $rc"; }
done
largs=(--heads "1 2" --seeds 1 --arm width --jobs 1 --threads 1)
ablate "${largs[@]}" --layers "2 1" --print-jobs --out "$work/layers" >"$work/ljobs.txt" \
    2>/dev/null
grep -q -- "--job H01-D032-s1 " "$work/ljobs.txt" && grep -q -- "--job L2-H02-D016-s1 " \
    "$work/ljobs.txt" || { cat "$work/ljobs.txt" >&2; fail "--print-jobs without both depths"; }
ablate "${largs[@]}" --layers "2 1" --out "$work/layers" 2>"$work/layers.err" ||
    { cat "$work/layers.err" >&2; fail "the --layers sweep exited $?"; }
ablate --out "$work/layers" --check || fail "outputs of the --layers sweep"
ablate "${largs[@]}" --out "$work/nolayers" 2>/dev/null || fail "the sweep without --layers"
cmp "$work/layers/runs/H01-D032-s1/model.ckpt" "$work/nolayers/runs/H01-D032-s1/model.ckpt" ||
    fail "a run of train's depth differs from the same run without --layers"
python3 - "$work/layers" <<'EOF2' || fail "the --layers report"
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/ablation.csv")))
assert sorted((r["L"], r["H"]) for r in rows) == [("1", "1"), ("1", "2"), ("2", "1"),
                                                  ("2", "2")], rows
s = json.load(open(d + "/runs/L2-H02-D016-s1/heads/summary.json"))
assert s["layers"] == 2 and s["heads"] == 2, s
md = open(d + "/ablation.md").read()
for L in (1, 2):
    assert "## Arm: fixed width (C = 32, D = C/H), L = %d\n" % L in md, md
page = open(d + "/index.html").read()
assert "L = 1" in page and "L = 2" in page
EOF2
for L in 1 2; do
    [ -s "$work/layers/compare-L$L.html" ] && grep -q "href=\"compare-L$L.html\"" \
        "$work/layers/index.html" || fail "no compare page for L = $L of the --layers sweep"
done
[ ! -e "$work/layers/compare.html" ] || fail "a sweep of two depths wrote compare.html"
python3 - "$work/nolayers/sweep.json" <<'EOF2'
import json, sys
s = json.load(open(sys.argv[1]))
del s["layers"]  # as written before --layers
json.dump(s, open(sys.argv[1], "w"))
EOF2
ablate --out "$work/nolayers" --report-only 2>/dev/null || fail "--report-only on an old sweep"
ablate --out "$work/nolayers" --check || fail "--check on an old sweep"
ablate "${largs[@]}" --out "$work/nolayers" 2>"$work/lold.err" || fail "rerun of an old sweep"
grep -q "2 finished earlier, 0 to do" "$work/lold.err" || { cat "$work/lold.err" >&2;
    fail "the rerun of an old sweep did not skip its finished runs"; }

step "13. --check and a rerun trust no damaged run"
victim=H01-D032-s1
for damage in junk directory fifo truncated; do
    rm -rf "$work/damaged"
    cp -r "$work/sweep" "$work/damaged"
    run="$work/damaged/runs/$victim"
    case $damage in
        junk) echo x >"$run/done.json" ;;
        directory) rm "$run/done.json"; mkdir "$run/done.json" ;;
        fifo) rm "$run/done.json"; mkfifo "$run/done.json" ;;
        truncated) head -c 5000 "$run/model.ckpt" >"$work/cut.ckpt"
                   cat "$work/cut.ckpt" >"$run/model.ckpt" ;;
    esac
    set +e
    timeout 60 scripts/ablate.sh --out "$work/damaged" --check 2>"$work/damaged.err"
    rc=$?
    set -e
    [ $rc -eq 1 ] && grep -q "run $victim: " "$work/damaged.err" &&
        ! grep -q "all outputs present" "$work/damaged.err" ||
        { cat "$work/damaged.err" >&2; fail "--check vouched for a $damage run (exit $rc)"; }
    timeout 120 scripts/ablate.sh --quick --bin "$bin" "${data[@]}" --out "$work/damaged" \
        --threads 1 2>"$work/damaged-rerun.err" ||
        { cat "$work/damaged-rerun.err" >&2; fail "the rerun after a $damage run exited $?"; }
    grep -q "5 finished earlier, 1 to do" "$work/damaged-rerun.err" &&
        grep -q "runs/$victim is not a finished run" "$work/damaged-rerun.err" ||
        { cat "$work/damaged-rerun.err" >&2; fail "a rerun counted a $damage run finished"; }
    [ -d "$work/damaged/runs/$victim.damaged" ] || fail "the $damage run was not kept aside"
    ablate --out "$work/damaged" --check || fail "outputs after retraining a $damage run"
done

step "14. a sweep.json with a number that is not finite: one line, nothing rewritten"
rm -rf "$work/nan"
cp -r "$work/sweep" "$work/nan"
sed -i 's/"steps": 30,/"steps": NaN,/' "$work/nan/sweep.json"
grep -q '"steps": NaN' "$work/nan/sweep.json" || fail "no steps to spoil in sweep.json"
sums_nan() { find "$work/nan" -type f -print0 | sort -z | xargs -0 sha256sum; }
before=$(sums_nan)
for mode in --report-only --check; do
    set +e
    scripts/ablate.sh --out "$work/nan" $mode 2>"$work/nan.err"
    rc=$?
    set -e
    [ $rc -eq 1 ] && [ "$(wc -l <"$work/nan.err")" -eq 1 ] &&
        grep -q "^ablate: error: $work/nan/sweep.json: \"steps\": nan is not a finite" \
            "$work/nan.err" || { cat "$work/nan.err" >&2; fail "$mode on a NaN step count"; }
done
[ "$before" = "$(sums_nan)" ] || fail "a file of the sweep was rewritten"

step "15. --head-routing: the routing sweep"
for bad in 0 -1 x "" "1 0"; do
    set +e
    ablate --head-routing "$bad" --out "$work/badroute" 2>"$work/badroute.err"
    rc=$?
    set -e
    [ $rc -eq 2 ] && [ "$(wc -l <"$work/badroute.err")" -eq 1 ] &&
        grep -q "^ablate: error: --head-routing '$bad': " "$work/badroute.err" &&
        [ ! -e "$work/badroute" ] ||
        { cat "$work/badroute.err" >&2; fail "--head-routing '$bad' gave exit $rc"; }
done
set +e
ablate --head-routing 1 --head-gates 0.5 --out "$work/badroute" 2>"$work/badroute.err"
rc=$?
set -e
[ $rc -eq 2 ] && [ "$(wc -l <"$work/badroute.err")" -eq 1 ] &&
    grep -q "^ablate: error: --head-routing and --head-gates" "$work/badroute.err" &&
    [ ! -e "$work/badroute" ] ||
    { cat "$work/badroute.err" >&2; fail "--head-routing with --head-gates gave exit $rc"; }
rargs=(--corpus text --head-routing 1 --threads 1 --out "$work/route")
ablate "${rargs[@]}" --print-jobs >"$work/rjobs.txt" 2>/dev/null ||
    fail "--print-jobs of a routing sweep exited $?"
[ "$(wc -l <"$work/rjobs.txt")" -eq 8 ] && [ "$(grep -c -- "-r1 " "$work/rjobs.txt")" -eq 2 ] &&
    grep -q -- "--job H04-D008-s1-r1 " "$work/rjobs.txt" &&
    grep -q -- "--job H04-D008-s2-r1 " "$work/rjobs.txt" ||
    { cat "$work/rjobs.txt" >&2; fail "--print-jobs: not the 6 plain and 2 routed jobs"; }
ablate "${rargs[@]}" 2>"$work/route.err" || { cat "$work/route.err" >&2;
    fail "the routing sweep exited $?"; }
ablate --out "$work/route" --check || fail "outputs of the routing sweep"
ablate "${rargs[@]}" 2>"$work/route2.err" || fail "rerun of the routing sweep"
grep -q "8 finished earlier, 0 to do" "$work/route2.err" || { cat "$work/route2.err" >&2;
    fail "the rerun of the routing sweep did not skip its finished runs"; }
cmp "$work/route/runs/H04-D008-s1/model.ckpt" "$work/gates/runs/H04-D008-s1/model.ckpt" ||
    fail "a plain run of the routing sweep differs from the same run without --head-routing"
python3 - "$work/route" <<'EOF2' || fail "the routing sweep's report"
import csv, json, sys
d = sys.argv[1]
log = [json.loads(x) for x in open(d + "/runs/H04-D008-s1-r1/run.jsonl")]
assert log[0]["head_routing"] == 1, log[0]
assert json.load(open(d + "/runs/H04-D008-s1-r1/heads/summary.json"))["routing"]["k"] == 1
assert json.load(open(d + "/sweep.json"))["routes"] == [1]
plain = {(r["arm"], r["H"], r["seed"]): r for r in csv.DictReader(open(d + "/ablation.csv"))}
assert len(plain) == 8, plain  # the routed runs are no rows of their own
rows = list(csv.DictReader(open(d + "/routing.csv")))
assert sorted((r["arm"], r["run"]) for r in rows) == [
    (a, "H04-D008-s%d-r1" % s) for a in ("headsize", "width") for s in (1, 2)], rows
for r in rows:
    k, h = plain[r["arm"], "1", r["seed"]], plain[r["arm"], "4", r["seed"]]
    assert (r["plain_k"], r["plain_h"]) == (k["run"], h["run"]), r
    assert (r["plain_k_bpb"], r["plain_h_bpb"]) == (k["bpb"], h["bpb"]), r
    assert r["plain_h_overlap"] == h["compromise_overlap"], r
    assert r["K"] == "1" and r["bpb"] != "" and r["overlap"] != "", r
md = open(d + "/ablation.md").read()
part = md.split("## Routing sweep: K of the H heads per token\n", 1)[1]
assert part.count("Not trained, as K ≥ H routes every head and is the plain run: "
                  "K = 1 at H = 1.") == 1, part
for arm, dk in (("fixed width (C = 32", 32), ("fixed head size (D = 8", 8)):
    t = part.split("**" + arm, 1)[1].split("Routed and plain runs per arm, H and K:\n\n",
                                          1)[1].split("\n\n")[0].split("\n")
    assert "| subject-verb acc. |" in t[0] and t[0].endswith("| overlap |"), t[0]
    cells = [[c.strip() for c in x.strip("|").split("|")] for x in t[2:]]
    assert [c[:5] for c in cells] == [["4", "1", "routed", "8", "2"],
                                      ["4", "1", "plain H = 1", str(dk), "2"],
                                      ["4", "1", "plain H = 4", "8", "2"]], cells
page = open(d + "/index.html").read()
assert "<h2>Routing sweep: K of the H heads per token</h2>" in page
assert 'href="runs/H04-D008-s1-r1/heads/index.html"' in page and ", K = 1, " in page
EOF2
cp -r "$work/route" "$work/route-cut"
python3 - "$work/route-cut/ablation.md" <<'EOF2'
import sys
p = sys.argv[1]
text = open(p).read()  # read before open(p, "w") empties the file
open(p, "w").write(text.replace("Routed and plain runs per arm, H and K:", "(cut)", 1))
EOF2
ablate --out "$work/route-cut" --check 2>"$work/rcut.err" &&
    fail "--check missed a cut routing table"
grep -q "'Routed and plain runs per arm, H and K:' rows None" "$work/rcut.err" ||
    { cat "$work/rcut.err" >&2; fail "--check did not name the missing routing table"; }
# An interrupted routed run resumes; its H = 1 twin is not in this sweep, so that row
# of the table is empty.
rargs=("${data[@]}" --steps 2000 --heads 2 --seeds 1 --arm width --head-routing 1 --jobs 2
       --threads 1 --out "$work/rintr")
scripts/ablate.sh --quick --bin "$bin" "${rargs[@]}" 2>"$work/rintr1.err" &
pid=$!
for _ in $(seq 100); do
    grep -qs '"type":"step"' "$work"/rintr/runs/H02-D016-s1-r1.partial/run.jsonl && break
    sleep 0.1
done
sleep 0.5
kill -INT $pid 2>/dev/null || true
set +e
wait $pid
rc=$?
set -e
if [ $rc -eq 130 ] && [ -e "$work/rintr/runs/H02-D016-s1-r1.partial/model.ckpt" ]; then
    ablate "${rargs[@]}" 2>"$work/rintr2.err" || { cat "$work/rintr2.err" >&2;
        fail "the resumed routing sweep exited $?"; }
    grep -q '"resume":true' "$work/rintr/runs/H02-D016-s1-r1/run.jsonl" ||
        fail "the second sweep did not resume the routed run"
else
    step "   (the routed run was not interrupted with a checkpoint: exit $rc; resume not" \
        "exercised)"
fi
ablate "${rargs[@]}" --check || fail "outputs of the resumed routing sweep"
grep -q "^| 2 | 1 | plain H = 1 | – | 0 | – |" "$work/rintr/ablation.md" ||
    fail "the routing table's row of a plain H = 1 the sweep does not have"

step "all checks passed in $(( $(date +%s) - t0 )) s"
