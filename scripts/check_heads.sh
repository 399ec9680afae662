#!/usr/bin/env bash
# Ground truth for the head analysis (docs/heads.md, "Ground truth"): trains on the
# built-in corpus, which plants its relations on purpose (docs/corpus.md), runs
# ./infer --heads --report on the validation split (./train --dump-val) and checks
# that the analysis finds what was planted. Every target it prints is required
# (exit 1 when one is missed). Two parts:
#
# 1. Bytes: the README's first command (./train with its defaults, seed 1337, the
#    text corpus' recipe --lr 0.005 --min-lr 0.0005):
#      previous-token: the best head's attention on the previous byte > 0.5
#      bracket: the best head's attention, from the byte before a closing bracket
#        or quote, on its opener > 0.3
#      local spelling: some head with mean attention distance <= 4 costs > 5 % of
#        the loss when silenced
# 2. Words: the same recipe with --vocab 1024 (about one token per word), H = 4,
#    seeds 1..SEEDS (default 5):
#      each of previous-token, bracket, determiner, agreement, coreference and
#        names has a head above its bar (summary.json's "bar") in at least
#        SEEDS - 1 seeds;
#      the heads serving those six relations are at least 4 distinct heads, in
#        at least SEEDS - 1 seeds;
#      each training takes at most 180 s (wall_seconds in its log).
# 20-30 minutes on 2 cores. Exit 2: usage error or missing programs.
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
PREV_MIN=0.5
BRACKET_MIN=0.3
LOCAL_DIST_MAX=4
LOCAL_COST_MIN=5
WORD_VOCAB=1024
WORD_RELATIONS="previous-token bracket determiner agreement coreference names"
WORD_DISTINCT_MIN=4
WORD_SECONDS_MAX=180

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
    train "$work/bytes" --seed 1337
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
          r.get("loss_ratio", 0), r.get("first_loss", 0))
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
    check "best head's attention on the previous byte" "$(get previous-token 3)" "$PREV_MIN" \
        "head $(get previous-token 2); uniform head $(printf %.3f "$(get previous-token 4)")"
    check "best head's attention on the open bracket or quote" "$(get bracket 3)" \
        "$BRACKET_MIN" "head $(get bracket 2); uniform head $(printf %.3f "$(get bracket 4)")"
    check "% loss cost of the most important local head" "$(get local 3)" "$LOCAL_COST_MIN" \
        "head $(get local 2) (distance <= $LOCAL_DIST_MAX)"
    echo "check_heads: part 1, measured with no target (docs/heads.md):"
    printf '  info induction score on the probe: %.3f (head %s)\n' "$(get induction 3)" \
        "$(get induction 2)"
    for name in copy names agreement determiner coreference; do
        printf '  info %-12s attention %.3f (head %s, uniform %.3f)\n' "$name" \
            "$(get "$name" 3)" "$(get "$name" 2)" "$(get "$name" 4)"
    done
fi

if [[ " $parts " == *" words "* ]]; then
    for s in $(seq 1 "$seeds"); do
        train "$work/words/s$s" --seed "$s" --vocab "$WORD_VOCAB"
        heads "$work/words/s$s"
    done
    echo
    echo "check_heads: part 2, words (--vocab $WORD_VOCAB, H = 4, seeds 1-$seeds): required targets"
    python3 - "$work/words" "$seeds" "$WORD_RELATIONS" "$WORD_DISTINCT_MIN" \
        "$WORD_SECONDS_MAX" <<'EOF' || failed=1
import csv, json, sys
root, nseeds, wanted = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
distinct_min, seconds_max = int(sys.argv[4]), float(sys.argv[5])
need = max(1, nseeds - 1)
above = {q: [] for q in wanted}     # per relation: the seeds with a head above the bar
distinct, seconds, missed = [], [], 0
for s in range(1, nseeds + 1):
    d = "%s/s%d" % (root, s)
    summ = json.load(open(d + "/report/summary.json"))
    if not summ.get("builtin_corpus"):
        sys.exit("check_heads: infer did not recognise the validation split as the built-in corpus")
    rel = summ["relations"]
    for q in wanted:
        if "bar" not in rel[q]:
            sys.exit("check_heads: summary.json has no bar for %s" % q)
        above[q].append(rel[q]["attention"] > rel[q]["bar"])
    heads = csv.DictReader(open(d + "/report/heads.csv"))
    serving = {r["layer"] + "." + r["head"] for r in heads
               if set(r["serves"].split("+")) & set(wanted)}
    distinct.append(len(serving))
    final = [json.loads(l) for l in open(d + "/run.jsonl") if '"type":"final"' in l]
    seconds.append(final[-1]["wall_seconds"] if final else float("inf"))
    print("  seed %d: %s | distinct heads %d | %.0f s" % (s, " ".join(
        "%s %.3f%s" % (q, rel[q]["attention"], "*" if above[q][-1] else "") for q in wanted),
        distinct[-1], seconds[-1]))
print("  (* above the bar: %s)" % ", ".join("%s %.2f" % (q, rel[q]["bar"]) for q in wanted))
def verdict(ok, label, got):
    global missed
    missed += not ok
    print("  %-4s %-64s %s" % ("ok" if ok else "MISS", label, got))
for q in wanted:
    n = sum(above[q])
    verdict(n >= need, "%s: a head above the bar in >= %d of %d seeds" % (q, need, nseeds),
            "%d of %d" % (n, nseeds))
n = sum(d >= distinct_min for d in distinct)
verdict(n >= need, ">= %d distinct heads serve them, in >= %d of %d seeds"
        % (distinct_min, need, nseeds), "%d of %d (%s)" % (n, nseeds, distinct))
slow = max(seconds)
verdict(slow <= seconds_max, "each training <= %.0f s" % seconds_max, "longest %.0f s" % slow)
sys.exit(1 if missed else 0)
EOF
fi

if [[ $failed == 1 ]]; then
    echo "check_heads: FAILED (a target was missed)"
    exit 1
fi
echo "check_heads: all required targets reached"
