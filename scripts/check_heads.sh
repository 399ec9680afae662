#!/usr/bin/env bash
# Ground truth for the head analysis: trains a small model on the built-in
# corpus (data/synth.h plants local spelling, agreement, bracket and copy
# relations on purpose), runs `infer --heads` on the corpus' validation part
# (the last 10 %), and checks that the analysis finds what was planted.
# Required (exit 1 when missed):
#   1. bracket: some head puts > 0.3 of its attention, at the byte before a
#      closing ')' or '"', on the byte that opened it (a uniform head: ~0.03),
#      over the relations synth_generate_relations lists
#   2. local spelling: some head with mean attention distance <= 4 costs > 5 %
#      of the loss when silenced
# Reported, and required only with STRICT=1 (the default run is too short for
# them; docs/heads.md says what longer runs reached):
#   3. some head's previous-token score > 0.5
#   4. some head's induction score on the random probe > 0.3
#   5. some head puts > 0.3 of its attention on the planted copy key (the byte
#      after the name's first occurrence)
#   6. the loss on a repeated name's letters is < 0.5 x the loss on the same
#      letters at their first occurrence (eval_sequence token losses, only
#      where the first occurrence is inside the same window)
# Exit 2: usage error or missing programs. About 1 minute on 2 idle cores.
#   HEADCOUNT_BIN=build-heads BUILD=build-heads scripts/check_heads.sh [WORKDIR]
# HEADCOUNT_BIN holds train and infer (default .), BUILD libheadcount.a (default
# build). STEPS (default 2000), TRAIN_ARGS (default: 2 layers x 4 heads, C = 64,
# lr 3e-3, batch 16), THREADS (default: all cores), REUSE=1 (keep WORKDIR's
# checkpoint) and STRICT=1 tune the run.
set -euo pipefail

bin=${HEADCOUNT_BIN:-.}
build=${BUILD:-build}
steps=${STEPS:-2000}
work=${1:-$build/check-heads}
strict=${STRICT:-0}
BRACKET_MIN=0.3
LOCAL_DIST_MAX=4
LOCAL_COST_MIN=5
PREV_MIN=0.5
IND_MIN=0.3
COPY_ATT_MIN=0.3
COPY_RATIO_MAX=0.5

for f in "$bin/train" "$bin/infer" "$build/libheadcount.a"; do
    if [[ ! -e "$f" ]]; then
        echo "check_heads: $f not found; build first (make, or set HEADCOUNT_BIN and BUILD)" >&2
        exit 2
    fi
done
# TRAIN_ARGS: extra ./train flags (model size, learning rate) for the ground-truth model.
read -r -a train_args <<< "${TRAIN_ARGS:---layers 2 --heads 4 --embd 64 --lr 3e-3 --batch 16}"
threads=()
if [[ -n "${THREADS:-}" ]]; then
    threads=(-j "$THREADS")
fi
mkdir -p "$work"

# A helper that writes the built-in corpus' validation part and measures the
# model on the planted relations (synth_generate_relations), which only C can
# reach.
cat > "$work/probe.c" <<'EOF'
/* check_heads probe: writes the validation part of the built-in corpus to a
 * file, then reports (1) the loss on repeated name letters against the same
 * letters at their first occurrence and (2) for each planted relation kind, the
 * head that attends most from query to key, against a uniform head. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/corpus.h"
#include "data/synth.h"
#include "model/ckpt.h"
#include "model/evaluate.h"
#include "model/heads.h"

static void fail(const char *msg)
{
    fprintf(stderr, "check_heads probe: %s\n", msg);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        fail("usage: probe CKPT OUT_TEXT");
    char err[1500];
    size_t N = SYNTH_DEFAULT_BYTES, start = (size_t)((double)N * (1.0 - 0.1));
    char *buf = malloc(N);
    size_t nrel = synth_generate_relations(buf, N, CORPUS_BUILTIN_SEED, NULL, 0);
    SynthRelation *rel = malloc(nrel * sizeof *rel);
    synth_generate_relations(buf, N, CORPUS_BUILTIN_SEED, rel, nrel);
    FILE *f = fopen(argv[2], "wb");
    if (!f || fwrite(buf + start, 1, N - start, f) != N - start || fclose(f))
        fail("cannot write the validation text");
    Model m;
    Tokenizer tok;
    if (ckpt_load(argv[1], &m, &tok, NULL, NULL, NULL, err, sizeof err))
        fail(err);
    size_t n = N - start;
    uint8_t *ids = malloc(n);
    float *tl = malloc(n * sizeof(float));
    if (tok_encode(&tok, (unsigned char *)buf + start, n, ids, "corpus", err, sizeof err))
        fail(err);
    int T = m.cfg.T, B = 16, L = m.cfg.L, H = m.cfg.H;
    Activations a;
    if (acts_init(&a, &m.cfg, B, T, 0, err, sizeof err))
        fail(err);
    double loss;
    if (eval_sequence(&m, &a, ids, n, NULL, &loss, NULL, tl, err, sizeof err))
        fail(err);
    double rep = 0, first = 0;
    long count = 0;
    /* Only relations whose whole name prefix is in the query's window of T
     * (eval_sequence scores consecutive windows): elsewhere copying is impossible. */
    for (size_t r = 0; r < nrel; r++)
        if (rel[r].kind == SYNTH_REL_COPY && rel[r].key >= start + 1 && rel[r].query + 1 < N &&
            (rel[r].key - 1 - start) / (size_t)T == (rel[r].query - start) / (size_t)T) {
            rep += tl[rel[r].query - start];
            first += tl[rel[r].key - 1 - start];
            count++;
        }
    printf("val_loss %.4f\ncopy_loss %.4f %.4f %ld\n", loss, rep / count, first / count, count);
    /* Attention from query to key, in consecutive windows of T over the text. */
    double *score = calloc((size_t)SYNTH_REL_KINDS * L * H, sizeof(double));
    double base[SYNTH_REL_KINDS] = {0};
    long cnt[SYNTH_REL_KINDS] = {0};
    int *in = malloc((size_t)B * T * sizeof(int));
    size_t r = 0, nwin = (n - 1) / T;
    for (size_t w0 = 0; w0 < nwin; w0 += B) {
        int nb = nwin - w0 < (size_t)B ? (int)(nwin - w0) : B;
        for (int i = 0; i < nb * T; i++)
            in[i] = ids[w0 * T + i];
        gpt_forward(&m, &a, in, NULL, nb, T, NULL);
        size_t lo = start + w0 * T, hi = lo + (size_t)nb * T;
        while (r < nrel && rel[r].query < lo)
            r++;
        for (size_t q = r; q < nrel && rel[q].query < hi; q++) {
            size_t wq = (rel[q].query - lo) / T;
            if (rel[q].key < lo + wq * T)
                continue;   /* the key is in an earlier window */
            int qi = (int)(rel[q].query - lo - wq * T), ki = (int)(rel[q].key - lo - wq * T);
            int k = rel[q].kind;
            for (int l = 0; l < L; l++)
                for (int h = 0; h < H; h++)
                    score[((size_t)k * L + l) * H + h] +=
                        heads_att(&a, l, (int)wq, h, T)[(size_t)qi * T + ki];
            base[k] += 1.0 / (qi + 1);
            cnt[k]++;
        }
    }
    static const char *names[SYNTH_REL_KINDS] = {"agree", "bracket", "copy"};
    for (int k = 0; k < SYNTH_REL_KINDS; k++) {
        int best = 0;
        for (int j = 1; j < L * H; j++)
            if (score[(size_t)k * L * H + j] > score[(size_t)k * L * H + best])
                best = j;
        printf("relation %s %d.%d %.4f %.4f %ld\n", names[k], best / H, best % H,
               cnt[k] ? score[(size_t)k * L * H + best] / cnt[k] : 0.0,
               cnt[k] ? base[k] / cnt[k] : 0.0, cnt[k]);
    }
    return 0;
}
EOF
${CC:-cc} -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -fopenmp -I. "$work/probe.c" \
    "$build/libheadcount.a" -lm -o "$work/probe"

if [[ "${REUSE:-0}" == 1 && -f "$work/synth.ckpt" ]]; then
    echo "check_heads: reusing $work/synth.ckpt (REUSE=1)"
else
    echo "check_heads: training $steps steps on the built-in corpus -> $work/synth.ckpt"
    "$bin/train" "${train_args[@]}" --steps "$steps" --eval-every 0 --save-every 0 \
        --out "$work/synth.ckpt" "${threads[@]}" 2>"$work/train.log" >/dev/null ||
        { tail -5 "$work/train.log"; exit 1; }
fi
"$work/probe" "$work/synth.ckpt" "$work/val.txt" >"$work/probe.txt"
"$bin/infer" --ckpt "$work/synth.ckpt" --heads "$work/val.txt" --report "$work/report" \
    "${threads[@]}" >"$work/heads.txt" 2>"$work/infer.log" || { cat "$work/infer.log"; exit 1; }
cat "$work/heads.txt"
echo

# heads.csv columns by name, so the check survives new columns.
csv_best() {   # csv_best COLUMN [FILTER_COLUMN MAX]: largest COLUMN over active heads
    awk -F, -v name="$1" -v fname="${2:-}" -v fmax="${3:-0}" '
        NR == 1 { for (i = 1; i <= NF; i++) { if ($i == name) c = i; if ($i == fname) f = i }; next }
        $4 == 0 && (fname == "" || $f <= fmax) && (best == "" || $c > best) { best = $c; head = $1 "." $2 }
        END { printf "%s %s\n", best == "" ? 0 : best, head == "" ? "-" : head }' "$work/report/heads.csv"
}
read -r prev prev_head < <(csv_best prev)
read -r ind ind_head < <(csv_best induction)
read -r local_cost local_head < <(csv_best delta_loss_pct distance "$LOCAL_DIST_MAX")
read -r _ rep first ncopy < <(grep '^copy_loss' "$work/probe.txt")
read -r _ _ copy_head copy_att copy_base _ < <(grep '^relation copy' "$work/probe.txt")
read -r _ _ br_head br_att br_base _ < <(grep '^relation bracket' "$work/probe.txt")
read -r _ _ ag_head ag_att ag_base _ < <(grep '^relation agree' "$work/probe.txt")

failed=0
check() {   # check REQUIRED LABEL VALUE OP TARGET DETAIL
    local ok mark
    ok=$(awk -v v="$3" -v t="$5" -v op="$4" 'BEGIN { print (op == ">" ? v > t : v < t) }')
    if [[ $ok == 1 ]]; then mark=ok; elif [[ $1 == 1 ]]; then mark=MISS; failed=1; else mark=miss; fi
    printf '  %-4s %-46s %8.4f  (target %s %s)  %s\n' "$mark" "$2" "$3" "$4" "$5" "$6"
}
echo "check_heads: $steps steps, ${train_args[*]}; required targets:"
check 1 "best attention to planted bracket openers" "$br_att" ">" "$BRACKET_MIN" \
    "head $br_head; uniform head $(printf %.3f "$br_base")"
check 1 "% loss cost of the best local head" "$local_cost" ">" "$LOCAL_COST_MIN" \
    "head $local_head (distance <= $LOCAL_DIST_MAX)"
req=0
[[ $strict == 1 ]] && req=1
echo "check_heads: reported targets$([[ $req == 1 ]] && echo ' (required: STRICT=1)'):"
check $req "best previous-token score" "$prev" ">" "$PREV_MIN" "head $prev_head"
check $req "best induction score (random probe)" "$ind" ">" "$IND_MIN" "head $ind_head"
check $req "best attention to planted copy keys" "$copy_att" ">" "$COPY_ATT_MIN" \
    "head $copy_head; uniform head $(printf %.3f "$copy_base")"
ratio=$(awk -v a="$rep" -v b="$first" 'BEGIN { print a / b }')
check $req "repeat / first-occurrence loss on names" "$ratio" "<" "$COPY_RATIO_MAX" \
    "$(printf '%.3f vs %.3f nats over %d letters' "$rep" "$first" "$ncopy")"
printf '  info agreement: best head %s attends %.3f to the subject (uniform head %.3f)\n' \
    "$ag_head" "$ag_att" "$ag_base"
if [[ $failed == 1 ]]; then
    echo "check_heads: FAILED (a planted relation was not found)"
    exit 1
fi
echo "check_heads: all required targets reached"
