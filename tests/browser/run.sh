#!/usr/bin/env bash
# The explorer's browser test (make test-browser): trains a small checkpoint in
# a few seconds, writes an --explore page and its --explore-json weights, a page
# of a full-size untrained model (4 layers x 16 heads, T = 256) and a page and
# weights of a small byte-pair (--vocab) model, then runs
# tests/browser/test_explore.mjs on them in headless Chromium (node 18 or later
# and Debian's chromium; no npm packages); then a compare page of four tiny
# models with 1, 4, 8 and 16 heads and the byte-pair one on one text, checked by
# tests/browser/test_compare.mjs against each model's own --explore-json; a
# treebank sentence's page with its gold dependencies (tests/browser/test_gold.mjs); and a
# heads report's page, which must fit the window (tests/browser/test_report.mjs).
#   tests/browser/run.sh [BIN_DIR] [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-.}
work=${2:-build/test-browser}
export OMP_WAIT_POLICY=passive
rm -rf "$work"
mkdir -p "$work"

# The short trainings below warm up for 100 steps, not the recipe's 800, which would
# be most of them, and keep the position embedding the fixtures were chosen with
# (the recipe's before it became --pos-std 0.1 --pos-decay off).
# A model that has learnt a little of the built-in corpus: its heads differ.
"$bin/train" --warmup 100 --pos-std 0.02 --pos-decay on --steps 150 -L 2 -H 4 -C 32 -T 64 \
    --eval-every 0 --eval-iters 2 \
    --threads 1 --out "$work/small.ckpt" >"$work/train.log" 2>&1
"$bin/train" --dump-val "$work/val.txt" --out "$work/unused.ckpt" >/dev/null 2>&1
text="The old mouse went twice. The boys still shout early. The old mouse went twice."
"$bin/infer" --ckpt "$work/small.ckpt" --threads 1 --explore "$work/small.html" \
    --explore-json "$work/small.json" --text "$text" 2>"$work/small.err"

# README's sentence on the same model: its chips name the pairs in words.
"$bin/infer" --ckpt "$work/small.ckpt" --threads 1 --explore "$work/readme.html" \
    --explore-json "$work/readme.json" \
    --text "The cat sat on the mat. Apple released a new phone because it is tasty." 2>"$work/readme.err"

# A model with learned head gates whose heads serve a planted relation, on whole
# lines of the built-in corpus (so its sentences are understood): six lines of the
# validation split, the first six from line 2 on where a head serves one; and one
# whose gates closed some heads (a larger penalty, fewer steps).
"$bin/train" --vocab 1024 --warmup 100 --pos-std 0.02 --pos-decay on --steps 900 -L 2 -H 4 \
    -C 32 -T 64 --eval-every 0 \
    --eval-iters 2 --threads 1 --head-gates 0.001 --out "$work/served.ckpt" >>"$work/train.log" 2>&1
for first in $(seq 2 40); do
    sed -n "$first,$((first + 5))p" "$work/val.txt" >"$work/lines.txt"
    "$bin/infer" --ckpt "$work/served.ckpt" --threads 1 --explore "$work/served.html" \
        --explore-json "$work/served.json" --text-file "$work/lines.txt" 2>"$work/served.err"
    if node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
                process.exit(j.heads.some((h) => h.serves.length) ? 0 : 1)' "$work/served.json"; then
        break
    fi
done
# The heads report of that model on the built-in corpus's text (every relation's
# column): its page must fit the window.
"$bin/infer" --ckpt "$work/served.ckpt" --threads 1 --heads "$work/val.txt" --windows 2 \
    --report "$work/report" >/dev/null 2>"$work/report.err"
"$bin/train" --warmup 100 --pos-std 0.02 --pos-decay on --steps 600 -L 2 -H 4 -C 32 -T 64 \
    --eval-every 0 --eval-iters 2 \
    --threads 1 --head-gates 0.005 --out "$work/closed.ckpt" >>"$work/train.log" 2>&1
"$bin/infer" --ckpt "$work/closed.ckpt" --threads 1 --explore "$work/closed.html" \
    --explore-json "$work/closed.json" --text-file "$work/lines.txt" 2>"$work/closed.err"

# The largest page the explorer is meant for: every head of a 4 x 16 model over
# a whole block of 256 bytes (one optimizer step: the weights need not be good).
"$bin/train" --steps 1 -L 4 -H 16 -C 64 -T 256 -B 1 --eval-every 0 --eval-iters 1 --threads 1 \
    --out "$work/big.ckpt" >>"$work/train.log" 2>&1
"$bin/infer" --ckpt "$work/big.ckpt" --threads 1 --explore "$work/big.html" \
    --text-file "$work/val.txt" 2>"$work/big.err"

# A byte-pair model: its tokens are several bytes each, shown as their text.
"$bin/train" --data "$work/val.txt" --vocab 300 --steps 60 -L 2 -H 4 -C 32 -T 48 --eval-every 0 \
    --eval-iters 2 --threads 1 --out "$work/bpe.ckpt" >>"$work/train.log" 2>&1
"$bin/infer" --ckpt "$work/bpe.ckpt" --threads 1 --explore "$work/bpe.html" \
    --explore-json "$work/bpe.json" --text "$text" 2>"$work/bpe.err"

# A treebank sentence (--text-file FILE.conllu): its gold dependencies on the
# byte-pair model's tokens.
{
    printf '# text = The cat sat on the mat.\n'
    printf '1\tThe\t_\tX\t_\t_\t2\tdet\t_\t_\n2\tcat\t_\tX\t_\t_\t3\tnsubj\t_\t_\n'
    printf '3\tsat\t_\tX\t_\t_\t0\troot\t_\t_\n4\ton\t_\tX\t_\t_\t6\tcase\t_\t_\n'
    printf '5\tthe\t_\tX\t_\t_\t6\tdet\t_\t_\n6\tmat\t_\tX\t_\t_\t3\tobl\t_\tSpaceAfter=No\n'
    printf '7\t.\t_\tX\t_\t_\t3\tpunct\t_\t_\n\n'
} >"$work/tree.conllu"
"$bin/infer" --ckpt "$work/bpe.ckpt" --threads 1 --explore "$work/gold.html" \
    --explore-json "$work/gold.json" --text-file "$work/tree.conllu" 2>"$work/gold.err"

# The compare page: H = 1, 4, 8 and 16 (a few steps each: the weights need not
# be good), the small model, whose heads attend to relations, and the byte-pair
# model, whose tokens span several bytes.
compare=()
weights=()
for h in 1 4 8 16; do
    "$bin/train" --steps 5 -L 2 -H $h -C 32 -T 64 -B 2 --eval-every 0 --eval-iters 1 \
        --threads 1 --out "$work/h$h.ckpt" >>"$work/train.log" 2>&1
done
for c in h1 h4 h8 h16 small bpe; do
    "$bin/infer" --ckpt "$work/$c.ckpt" --threads 1 --explore "$work/$c-alone.html" \
        --explore-json "$work/$c-alone.json" --text "$text" 2>"$work/$c-alone.err"
    compare+=(--ckpt "$work/$c.ckpt")
    weights+=("$work/$c-alone.json")
done
"$bin/infer" "${compare[@]}" --threads 1 --explore "$work/compare.html" --text "$text" \
    2>"$work/compare.err"

node tests/browser/test_explore.mjs "$work/small.html" "$work/small.json" "$work/big.html"
node tests/browser/test_explore.mjs "$work/bpe.html" "$work/bpe.json"
node tests/browser/test_explore.mjs "$work/readme.html" "$work/readme.json" --readme
node tests/browser/test_explore.mjs "$work/served.html" "$work/served.json" --served
node tests/browser/test_explore.mjs "$work/closed.html" "$work/closed.json" --closed
node tests/browser/test_gold.mjs "$work/gold.html" "$work/gold.json"
node tests/browser/test_compare.mjs "$work/compare.html" "${weights[@]}"
node tests/browser/test_report.mjs "$work/report/index.html"
