#!/usr/bin/env bash
# Ground truth for the head analysis (docs/heads.md, "Ground truth"): trains on the
# built-in corpus, which plants its relations on purpose (docs/corpus.md), runs
# ./infer --heads --report on the validation split (./train --dump-val) and checks
# that the analysis finds what was planted. Every target it prints is required
# (exit 1 when one is missed). Two parts:
#
# 1. Bytes: the default recipe with --vocab 0 (seed 1337, the text corpus'
#    recipe --lr 0.005 --min-lr 0.0005):
#      previous-token: the best head's attention on the previous byte > its bar
#        (summary.json's "bar", 0.5)
#      bracket: the best head's attention, from the byte before a closing bracket
#        or quote, on its opener > its bar (0.3)
#      local spelling: some head with mean attention distance <= 4 costs > 5 % of
#        the loss when silenced
# 2. Words: the README's first command (./train, the recipe's 1,536 byte-pair
#    tokens), H = 4, seeds 1..SEEDS (default 5), each in at least SEEDS - 1 seeds:
#      learned: each planted relation's (summary.json's "planted") minimal-pair
#        accuracy >= 0.9 (coreference against both contrasts: the line's other
#        noun, and a noun of its class not in the sentence; names against the most
#        likely other token);
#      served: each planted relation has a head that attends to its key above the
#        bar and is needed for it, and those heads are at least 4 distinct heads;
#      a previous-token head: the best head's attention on the previous token
#        > its bar;
#    and for seed 1, on the documents' four sentences typed as a user would
#    (--explore-json): all four understood, and every relation the grammar
#    plants in them marked and served by a head on that text;
#    and each training takes at most 180 s (wall_seconds in its log).
# About 16 minutes on 2 quiet cores (AMD EPYC, Zen 4), 24 on a Zen 3 (where each training
# takes about 240 s and the 180 s target is missed). Exit 2: usage error or missing programs.
#   HEADCOUNT_BIN=build-x scripts/check_heads.sh [WORKDIR]
# HEADCOUNT_BIN holds train and infer (default .); WORKDIR defaults to
# ${BUILD:-build}/check-heads. SEEDS (default 5), THREADS (default: all cores),
# PARTS ("bytes words", default both) and REUSE=1 (keep the checkpoints already in
# WORKDIR: bytes/model.ckpt, words/sN/model.ckpt with its run.jsonl) tune it.
set -euo pipefail

bin=${HEADCOUNT_BIN:-.}
work=${1:-${BUILD:-build}/check-heads}
seeds=${SEEDS:-5}
parts=${PARTS:-bytes words}
LOCAL_DIST_MAX=4
LOCAL_COST_MIN=5
PAIR_ACCURACY_MIN=0.9
WORD_DISTINCT_MIN=4
WORD_SECONDS_MAX=180
DOCS="The cat sat on the mat. The tired cat slept on the warm mat. The cat sat down. Apple released a new phone because it is tasty."

for f in "$bin/train" "$bin/infer"; do
    if [[ ! -x "$f" ]]; then
        echo "check_heads: $f not found; build first (make, or set HEADCOUNT_BIN)" >&2
        exit 2
    fi
done
if ! command -v python3 >/dev/null; then
    echo "check_heads: python3 is needed to read summary.json" >&2
    exit 2
fi
if ! [[ "$seeds" =~ ^[1-9][0-9]*$ ]]; then
    echo "check_heads: SEEDS=$seeds: expected a whole number of at least 1" >&2
    exit 2
fi
threads=()
if [[ -n "${THREADS:-}" ]]; then
    threads=(-j "$THREADS")
fi
mkdir -p "$work"
"$bin/train" --dump-val "$work/val.txt" 2>/dev/null

# train DIR ARGS...: trains DIR/model.ckpt with its log DIR/run.jsonl (or reuses them).
train() {
    local dir=$1
    shift
    mkdir -p "$dir"
    if [[ "${REUSE:-0}" == 1 && -f "$dir/model.ckpt" ]]; then
        echo "check_heads: reusing $dir/model.ckpt (REUSE=1)"
        return
    fi
    rm -f "$dir/model.ckpt" "$dir/run.jsonl"
    echo "check_heads: ./train $* -> $dir/model.ckpt"
    "$bin/train" "$@" --out "$dir/model.ckpt" --log "$dir/run.jsonl" "${threads[@]}" \
        2>"$dir/train.log" >/dev/null || { tail -5 "$dir/train.log"; exit 1; }
}

# heads DIR: ./infer --heads --report DIR/report on the validation split.
heads() {
    rm -rf "$1/report"
    "$bin/infer" --ckpt "$1/model.ckpt" --heads "$work/val.txt" --report "$1/report" \
        "${threads[@]}" >"$1/heads.txt" 2>"$1/infer.log" || { cat "$1/infer.log"; exit 1; }
}

failed=0
check() {   # check LABEL VALUE TARGET DETAIL: VALUE > TARGET is required
    local mark=ok
    if [[ $(awk -v v="$2" -v t="$3" 'BEGIN { print (v > t) }') != 1 ]]; then
        mark=MISS
        failed=1
    fi
    printf '  %-4s %-58s %8.4f  (target > %s)  %s\n' "$mark" "$1" "$2" "$3" "$4"
}

if [[ " $parts " == *" bytes "* ]]; then
    train "$work/bytes" --seed 1337 --vocab 0
    heads "$work/bytes"
    cat "$work/bytes/heads.txt"
    echo
    # The numbers, from the report's files (by name, so new fields do not break it).
    python3 - "$work/bytes/report" "$LOCAL_DIST_MAX" >"$work/bytes/numbers.txt" <<'EOF'
import csv, json, sys
rep, dist_max = sys.argv[1], float(sys.argv[2])
s = json.load(open(rep + "/summary.json"))
if not s.get("builtin_corpus"):
    sys.exit("check_heads: infer did not recognise the validation split as the built-in corpus")
for name, r in s["relations"].items():
    print(name, r["best_head"] or "-", r["attention"], r["uniform"], r["loss"],
          r.get("loss_ratio", 0), r.get("first_loss", 0), r["bar"])
rows = [r for r in csv.DictReader(open(rep + "/heads.csv")) if r["masked"] == "0"]
local = [r for r in rows if float(r["distance"]) <= dist_max]
best = max(local, key=lambda r: float(r["delta_loss_pct"]), default=None)
print("local", "L%sH%s" % (best["layer"], best["head"]) if best else "-",
      best["delta_loss_pct"] if best else 0)
ind = max(rows, key=lambda r: float(r["induction"]))
print("induction", "L%sH%s" % (ind["layer"], ind["head"]), ind["induction"])
EOF
    get() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' "$work/bytes/numbers.txt"; }
    echo "check_heads: part 1, bytes (seed 1337): required targets"
    check "best head's attention on the previous byte" "$(get previous-token 3)" \
        "$(get previous-token 8)" \
        "head $(get previous-token 2); uniform head $(printf %.3f "$(get previous-token 4)")"
    check "best head's attention on the open bracket or quote" "$(get bracket 3)" \
        "$(get bracket 8)" "head $(get bracket 2); uniform head $(printf %.3f "$(get bracket 4)")"
    check "% loss cost of the most important local head" "$(get local 3)" "$LOCAL_COST_MIN" \
        "head $(get local 2) (distance <= $LOCAL_DIST_MAX)"
    echo "check_heads: part 1, measured with no target (docs/heads.md):"
    printf '  info induction score on the probe: %.3f (head %s)\n' "$(get induction 3)" \
        "$(get induction 2)"
    # the relations' lines (8 fields) but those with a target above, and rare's
    for name in $(awk 'NF == 8 && $1 != "previous-token" && $1 != "bracket" && $1 != "rare" {
                       print $1 }' "$work/bytes/numbers.txt"); do
        printf '  info %-12s attention %.3f (head %s, uniform %.3f)\n' "$name" \
            "$(get "$name" 3)" "$(get "$name" 2)" "$(get "$name" 4)"
    done
fi

if [[ " $parts " == *" words "* ]]; then
    for s in $(seq 1 "$seeds"); do
        train "$work/words/s$s" --seed "$s"
        heads "$work/words/s$s"
    done
    "$bin/infer" --ckpt "$work/words/s1/model.ckpt" --explore "$work/words/s1/docs.html" \
        --explore-json "$work/words/s1/docs.json" --text "$DOCS" "${threads[@]}" \
        2>"$work/words/s1/docs.log" || { cat "$work/words/s1/docs.log"; exit 1; }
    echo
    echo "check_heads: part 2, words (the default recipe, H = 4, seeds 1-$seeds): required targets"
    python3 - "$work/words" "$seeds" "$PAIR_ACCURACY_MIN" "$WORD_DISTINCT_MIN" \
        "$WORD_SECONDS_MAX" <<'EOF' || failed=1
import json, sys
root, nseeds = sys.argv[1], int(sys.argv[2])
acc_min, distinct_min, seconds_max = map(float, sys.argv[3:6])
need = max(1, nseeds - 1)
missed = 0
def verdict(ok, label, got):
    global missed
    missed += not ok
    print("  %-4s %-66s %s" % ("ok" if ok else "MISS", label, got))

summaries, seconds = [], []
for s in range(1, nseeds + 1):
    d = "%s/s%d" % (root, s)
    summ = json.load(open(d + "/report/summary.json"))
    if not summ.get("builtin_corpus"):
        sys.exit("check_heads: infer did not recognise the validation split as the built-in corpus")
    summaries.append(summ)
    final = [json.loads(l) for l in open(d + "/run.jsonl") if '"type":"final"' in l]
    seconds.append(final[-1]["wall_seconds"] if final else float("inf"))
# The planted relations, in summary.json's order: read from the report (its
# "planted"), not copied here.
planted = [q for q, r in summaries[0]["relations"].items() if r["planted"]]
# Learned: each set's accuracy, and a second contrast's class_accuracy where a
# relation has one (coreference).
sets = [(q, "accuracy") for q in planted] + [
    (q, "class_accuracy") for q in planted
    if any("class_accuracy" in summ["relations"][q] for summ in summaries)]
for q, field in sets:
    accs = [summ["relations"][q].get(field) for summ in summaries]
    label = q if field == "accuracy" else q + " (class)"
    got = " ".join("-" if a is None else "%.3f" % a for a in accs)
    n = sum(a is not None and a >= acc_min for a in accs)
    verdict(n >= need, "learned: %s, pair accuracy >= %.1f" % (label, acc_min),
            "%d of %d (%s)" % (n, nseeds, got))
# Served: a head attends above the bar and is needed, per relation and seed.
for q in planted:
    per = [sorted(h for h, rels in summ["serves"].items() if q in rels) for summ in summaries]
    n = sum(bool(p) for p in per)
    verdict(n >= need, "served: %s" % q,
            "%d of %d (%s)" % (n, nseeds, " ".join("+".join(p) or "-" for p in per)))
distinct = [len({h for h, rels in summ["serves"].items() if set(rels) & set(planted)})
            for summ in summaries]
n = sum(d >= distinct_min for d in distinct)
verdict(n >= need, "served: >= %d distinct heads serve them" % distinct_min,
        "%d of %d (%s)" % (n, nseeds, " ".join(map(str, distinct))))
prev = [summ["relations"]["previous-token"]["attention"] for summ in summaries]
prev_min = summaries[0]["relations"]["previous-token"]["bar"]
n = sum(p > prev_min for p in prev)
verdict(n >= need, "a previous-token head (attention > %.1f)" % prev_min,
        "%d of %d (%s)" % (n, nseeds, " ".join("%.3f" % p for p in prev)))
print("  (each of the above is required in at least %d of %d seeds)" % (need, nseeds))
# The documents' sentences, seed 1: understood, marked and served on that text.
docs = json.load(open(root + "/s1/docs.json"))
understood = sum(s["understood"] for s in docs["sentences"])
verdict(understood == 4, "documents' sentences (seed 1): all 4 understood", "%d of 4" % understood)
for q in planted:
    r = docs["relations"].get(q)
    if not r or not r.get("query_key"):
        continue
    verdict(bool(r.get("serves")), "documents' sentences (seed 1): %s marked, and served" % q,
            "%d marked, served by %s" % (len(r["query_key"]), "+".join(r.get("serves") or []) or "-"))
slow = max(seconds)
verdict(slow <= seconds_max, "each training <= %.0f s" % seconds_max,
        "longest %.0f s (%s)" % (slow, " ".join("%.0f" % x for x in seconds)))
sys.exit(1 if missed else 0)
EOF
fi

if [[ $failed == 1 ]]; then
    echo "check_heads: FAILED (a target was missed)"
    exit 1
fi
echo "check_heads: all required targets reached"
