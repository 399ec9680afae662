#!/usr/bin/env bash
# Ground truth for the head analysis: runs the README's first command (./train
# with its defaults, on the built-in corpus, which plants previous-token,
# bracket, agreement and copy relations on purpose: docs/corpus.md, and trains
# with that corpus' own recipe, --lr 0.005 --min-lr 0.0005), writes the
# validation split with ./train --dump-val, runs ./infer --heads --report on it,
# and checks that the analysis finds what was planted. Every target it prints is
# required (exit 1 when one is missed):
#   1. previous-token: the best head's mean attention on the previous byte > 0.5
#      (0.56-0.74 over four seeds with the text recipe; 0.35-0.39 at --data's
#      learning rate, which no corpus change lifted: docs/heads.md)
#   2. bracket: the best head's mean attention, from the byte before a closing
#      bracket or quote, on the byte that opened it > 0.3 (a uniform head: ~0.03)
#   3. local spelling: some head with mean attention distance <= 4 costs > 5 % of
#      the loss when silenced
# The copy relations (induction probe, attention on the copy key, the copy loss
# ratio) and agreement are printed as measurements with no target: the default
# run does not learn them (docs/heads.md, "Ground truth", gives the targets they
# miss and the numbers measured).
# Exit 2: usage error or missing programs. 2-5 minutes on 2 cores.
#   HEADCOUNT_BIN=build-x scripts/check_heads.sh [WORKDIR]
# HEADCOUNT_BIN holds train and infer (default .); WORKDIR defaults to
# ${BUILD:-build}/check-heads. SEED (default 1337: the README's run), STEPS
# (default: train's), TRAIN_ARGS (extra ./train flags), THREADS (default: all
# cores) and REUSE=1 (keep WORKDIR's checkpoint) tune the run; with any of
# STEPS or TRAIN_ARGS it is no longer the README's run, and the targets may not
# hold.
set -euo pipefail

bin=${HEADCOUNT_BIN:-.}
work=${1:-${BUILD:-build}/check-heads}
seed=${SEED:-1337}
PREV_MIN=0.5
BRACKET_MIN=0.3
LOCAL_DIST_MAX=4
LOCAL_COST_MIN=5

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
read -r -a train_args <<< "${TRAIN_ARGS:-}"
if [[ -n "${STEPS:-}" ]]; then
    train_args+=(--steps "$STEPS")
fi
threads=()
if [[ -n "${THREADS:-}" ]]; then
    threads=(-j "$THREADS")
fi
mkdir -p "$work"

if [[ "${REUSE:-0}" == 1 && -f "$work/default.ckpt" ]]; then
    echo "check_heads: reusing $work/default.ckpt (REUSE=1)"
else
    echo "check_heads: ./train --seed $seed ${train_args[*]} on the built-in corpus -> $work/default.ckpt"
    "$bin/train" --seed "$seed" "${train_args[@]}" --out "$work/default.ckpt" "${threads[@]}" \
        2>"$work/train.log" >/dev/null || { tail -5 "$work/train.log"; exit 1; }
fi
"$bin/train" --dump-val "$work/val.txt" 2>/dev/null
"$bin/infer" --ckpt "$work/default.ckpt" --heads "$work/val.txt" --report "$work/report" \
    "${threads[@]}" >"$work/heads.txt" 2>"$work/infer.log" || { cat "$work/infer.log"; exit 1; }
cat "$work/heads.txt"
echo

# The numbers, from the report's files (by name, so new fields do not break it).
python3 - "$work/report" "$LOCAL_DIST_MAX" >"$work/numbers.txt" <<'EOF'
import csv, json, sys
rep, dist_max = sys.argv[1], float(sys.argv[2])
s = json.load(open(rep + "/summary.json"))
if not s.get("builtin_corpus"):
    sys.exit("check_heads: infer did not recognise the validation split as the built-in corpus")
rel = s["relations"]
for name in ("previous-token", "bracket", "copy", "agreement", "names"):
    r = rel[name]
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
get() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' "$work/numbers.txt"; }

failed=0
check() {   # check LABEL VALUE TARGET DETAIL: VALUE > TARGET is required
    local mark=ok
    if [[ $(awk -v v="$2" -v t="$3" 'BEGIN { print (v > t) }') != 1 ]]; then
        mark=MISS
        failed=1
    fi
    printf '  %-4s %-52s %8.4f  (target > %s)  %s\n' "$mark" "$1" "$2" "$3" "$4"
}
echo "check_heads: required targets (seed $seed):"
check "best head's attention on the previous byte" "$(get previous-token 3)" "$PREV_MIN" \
    "head $(get previous-token 2); uniform head $(printf %.3f "$(get previous-token 4)")"
check "best head's attention on the open bracket or quote" "$(get bracket 3)" "$BRACKET_MIN" \
    "head $(get bracket 2); uniform head $(printf %.3f "$(get bracket 4)")"
check "% loss cost of the most important local head" "$(get local 3)" "$LOCAL_COST_MIN" \
    "head $(get local 2) (distance <= $LOCAL_DIST_MAX)"
echo "check_heads: measured, no target (not learnt by the default run; docs/heads.md):"
printf '  info induction score on the probe: %.3f (head %s)\n' "$(get induction 3)" \
    "$(get induction 2)"
printf '  info copy (any repeated 3 bytes): attention %.3f (head %s, uniform %.3f), loss ratio %.3f\n' \
    "$(get copy 3)" "$(get copy 2)" "$(get copy 4)" "$(get copy 6)"
printf '  info planted names: attention %.3f (head %s, uniform %.3f), loss ratio %.3f (%.3f vs %.3f nats)\n' \
    "$(get names 3)" "$(get names 2)" "$(get names 4)" "$(get names 6)" \
    "$(awk -v r="$(get names 6)" -v f="$(get names 7)" 'BEGIN { print r * f }')" "$(get names 7)"
printf '  info agreement: attention %.3f (head %s, uniform %.3f)\n' "$(get agreement 3)" \
    "$(get agreement 2)" "$(get agreement 4)"
if [[ $failed == 1 ]]; then
    echo "check_heads: FAILED (a planted relation was not found)"
    exit 1
fi
echo "check_heads: all required targets reached"
