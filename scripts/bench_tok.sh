#!/usr/bin/env bash
# bench_tok.sh: speed of the byte-pair tokenizer (bench/bench_bpe.c: learning
# 4,096 merges from a file and encoding it, one thread, medians of
# BENCH_TOK_RUNS runs) and, on the same file and vocabulary size, of Hugging
# Face's `tokenizers` (scripts/bench_tok_hf.py) when the interpreter
# BENCH_TOK_PYTHON (default python3) can import it. `make bench` runs it as its
# tokenizer section; `make bench-tok` runs it alone. Writes $BENCH_OUT/tok.csv
# (default build/bench). Skips, saying so, when the file is absent.
#   BENCH_TOK_DATA=../shared/data/tinyshakespeare.txt  BENCH_TOK_RUNS=5
#   BENCH_TOK_PYTHON=python3
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-build/bench}
data=${BENCH_TOK_DATA:-../shared/data/tinyshakespeare.txt}
runs=${BENCH_TOK_RUNS:-5}
py=${BENCH_TOK_PYTHON:-python3}
mkdir -p "$out"
gcc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O3 ${ARCH--march=native} -fopenmp \
    -ffp-contract=off -I. bench/bench_bpe.c build/libheadcount.a -lm -o build/bench_bpe

echo "== byte-pair tokenizer (one thread, $runs runs, 4096 merges)"
if [ ! -r "$data" ]; then
    echo "(skipped: $data is absent; set BENCH_TOK_DATA to a text file)"
    exit 0
fi
rm -f "$out/tok.csv"
./build/bench_bpe --data "$data" --runs "$runs" --merges 4096 --csv "$out/tok.csv"
if "$py" -c 'import tokenizers' 2>/dev/null; then
    "$py" scripts/bench_tok_hf.py --data "$data" --runs "$runs" --merges 4096 \
        --csv "$out/tok.csv" | sed 's/^/tokenizers: /'
else
    echo "(Hugging Face comparison skipped: $py cannot import tokenizers; set"
    echo " BENCH_TOK_PYTHON to an interpreter that can, e.g. a venv's bin/python)"
fi
