#!/usr/bin/env bash
# The head-count ablation pipeline end to end, on tiny settings (CI; about a minute):
#   1. scripts/ablate.sh --quick runs, and --check finds every output well formed;
#   2. a second run skips every finished run and changes none of them;
#   3. a run into the same --out with other settings is refused (exit 2);
#   4. a sweep interrupted with SIGINT resumes from its checkpoint and finishes;
#   5. the report reads heads results: hand-made summary.json/heads.csv samples in the
#      format of `./infer --heads --report` are dropped into a copy of the sweep, and
#      the heads columns, tables and plots must show their numbers.
# usage: tests/ablation_check.sh [BIN_DIR] [WORK_DIR]   (defaults: . and build/ablation-check)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.}
work=${2:-build/ablation-check}
rm -rf "$work"
mkdir -p "$work"
fail() { echo "ablation_check: FAIL: $*" >&2; exit 1; }
step() { echo "ablation_check: $*" >&2; }

step "1. quick sweep"
t0=$(date +%s)
scripts/ablate.sh --quick --bin "$bin" --out "$work/sweep" 2>"$work/sweep.err" ||
    { cat "$work/sweep.err" >&2; fail "quick sweep exited $?"; }
step "   took $(( $(date +%s) - t0 )) s"
scripts/ablate.sh --quick --out "$work/sweep" --check || fail "outputs of the quick sweep"

step "2. rerun skips finished runs"
sums() { find "$work/sweep/runs" -name done.json -print0 | sort -z | xargs -0 sha256sum; }
before=$(sums)
scripts/ablate.sh --quick --bin "$bin" --out "$work/sweep" 2>"$work/rerun.err" ||
    { cat "$work/rerun.err" >&2; fail "rerun exited $?"; }
grep -q "6 finished earlier, 0 to do" "$work/rerun.err" || { cat "$work/rerun.err" >&2;
    fail "rerun did not skip the 6 finished runs"; }
[ "$before" = "$(sums)" ] || fail "rerun changed finished runs"

step "3. other settings into the same --out are refused"
set +e
scripts/ablate.sh --quick --steps 31 --bin "$bin" --out "$work/sweep" 2>"$work/mismatch.err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "other settings (steps: 31 here, 30 there)" "$work/mismatch.err" ||
    { cat "$work/mismatch.err" >&2; fail "a mismatched rerun gave exit $rc"; }

step "4. an interrupted sweep resumes"
args=(--quick --steps 1500 --heads 1 --seeds 1 --arm width --jobs 1 --threads 1
      --bin "$bin" --out "$work/intr")
scripts/ablate.sh "${args[@]}" 2>"$work/intr1.err" &
pid=$!
for _ in $(seq 100); do  # wait until training is under way (a step record is logged)
    grep -qs '"type":"step"' "$work"/intr/runs/*.partial/run.jsonl && break
    sleep 0.1
done
sleep 1
kill -INT $pid
set +e
wait $pid
rc=$?
set -e
if [ $rc -eq 130 ]; then
    ls "$work"/intr/runs/*.partial/model.ckpt >/dev/null || fail "no checkpoint after SIGINT"
    scripts/ablate.sh "${args[@]}" 2>"$work/intr2.err" || { cat "$work/intr2.err" >&2;
        fail "resumed sweep exited $?"; }
    grep -q '"resume":true' "$work"/intr/runs/H01-D032-s1/run.jsonl ||
        fail "the second sweep did not resume the run"
else
    step "   (the run finished before the signal: exit $rc; resume not exercised)"
fi
scripts/ablate.sh "${args[@]}" --check || fail "outputs of the resumed sweep"

step "5. the report consumes heads results (hand-made samples)"
cp -r "$work/sweep" "$work/fixture"
python3 - "$work/fixture" <<'EOF'
import json, os, sys
# Samples in the format of ./infer --heads --report DIR (summary.json and heads.csv),
# for the quick sweep's L=1 models with H=1 and H=4; extra keys and a null must be
# tolerated.
SUMMARY = {
    1: '''{"layers":1,"heads":1,"total_heads":1,"active_heads":1,"windows":2,
          "tokens_per_window":32,"base_loss":3.7,"mean_entropy":2.9,"mean_distance":11.5,
          "type_counts":{"induction":0,"previous-token":0,"first-position":0,"delimiter":0,
                         "local":0,"broad":1,"mixed":0,"masked":0},
          "effective_heads":1.0,"effective_heads_per_layer":[1.0],"removable_heads_1pct":0,
          "max_importance":0.21,"jsd_within_layer":null,"jsd_between_layers":null,
          "delimiter_share":0.05}''',
    4: '''{"layers":1,"heads":4,"total_heads":4,"active_heads":4,"windows":2,
          "tokens_per_window":32,"base_loss":3.7,"mean_entropy":2.25,"mean_distance":6.75,
          "type_counts":{"induction":0,"previous-token":1,"first-position":1,"delimiter":0,
                         "local":1,"broad":1,"mixed":0,"masked":0},
          "effective_heads":2.5,"effective_heads_per_layer":[2.5],"removable_heads_1pct":3,
          "max_importance":0.052,"jsd_within_layer":0.3,"jsd_between_layers":null,
          "delimiter_share":0.08}''',
}
HEADER = ("layer,head,type,masked,entropy,confidence,distance,prev,self,first,delim,repeat,"
          "induction,duplicate,delta_loss,grad,grad_window,jsd_layer,jsd_nearest,"
          "delta_loss_pct,nearest\n")
CSV = {
    1: ["0,0,broad,0,2.9,0.1,11.5,0.05,0.04,0.1,0.02,0,0,0,0.21,0.3,0.3,0,0,5.67568,\n"],
    4: ["0,0,previous-token,0,0.8,0.7,1.1,0.7,0.1,0,0,0,0,0,0.052,0.1,0.1,0.3,0.2,1.40541,0.1\n",
        "0,1,local,0,1.9,0.3,3.2,0.3,0.2,0,0,0,0,0,0.02,0.05,0.05,0.3,0.2,0.540541,0.0\n",
        "0,2,first-position,0,2.7,0.5,15.3,0,0,0.5,0,0,0,0,0.01,0.02,0.02,0.4,0.3,0.27027,0.3\n",
        "0,3,broad,0,3.6,0.1,7.4,0.03,0.03,0.05,0.02,0,0,0,-0.004,0.01,0.01,0.3,0.2,-0.108108,0.1\n"],
}
root = sys.argv[1]
for name in sorted(os.listdir(os.path.join(root, "runs"))):
    d = os.path.join(root, "runs", name)
    done = json.load(open(os.path.join(d, "done.json")))
    os.makedirs(os.path.join(d, "heads"), exist_ok=True)
    open(os.path.join(d, "heads", "summary.json"), "w").write(SUMMARY[done["H"]])
    open(os.path.join(d, "heads", "heads.csv"), "w").write(HEADER + "".join(CSV[done["H"]]))
    open(os.path.join(d, "heads", "index.html"), "w").write("<html><body>heads</body></html>")
    done["heads_status"] = "ok"
    json.dump(done, open(os.path.join(d, "done.json"), "w"))
EOF
python3 scripts/ablate_report.py "$work/fixture" || fail "report on the fixture"
python3 scripts/ablate_check.py "$work/fixture" || fail "outputs of the fixture"
python3 - "$work/fixture" <<'EOF' || fail "heads numbers in the fixture's report"
import csv, sys, xml.etree.ElementTree as ET
root = sys.argv[1]
rows = list(csv.DictReader(open(root + "/ablation.csv")))
want = {1: ("2.9", "11.5", "1", "0", "0.21", "0"), 4: ("2.25", "6.75", "2.5", "3", "0.052", "1")}
for r in rows:
    got = (r["heads_mean_entropy"], r["heads_mean_distance"], r["effective_heads"],
           r["removable_heads_1pct"], r["max_importance"], r["n_previous_token"])
    assert got == want[int(r["H"])], (r["run"], got)
    assert r["heads_report"] == "runs/%s/heads/index.html" % r["run"], r["heads_report"]
md = open(root + "/ablation.md").read()
assert "| H | previous-token | local | induction |" in md, "no head-type table"
assert "3.0 of 4" in md, "no removable-heads sentence"
svg = "{http://www.w3.org/2000/svg}"
dots = list(ET.parse(root + "/plots/importance.svg").getroot().iter(svg + "circle"))
assert len(dots) >= 2 * 2 * (1 + 4), "importance.svg: %d dots" % len(dots)
bars = [r for r in ET.parse(root + "/plots/head_types.svg").getroot().iter(svg + "rect")
        if r.find(svg + "title") is not None]
assert len(bars) == 2 * (1 + 4), "head_types.svg: %d stacked segments" % len(bars)
html = open(root + "/index.html").read()
assert html.count("heads/index.html") == 6, "index.html should link 6 heads reports"
EOF
step "all checks passed"
