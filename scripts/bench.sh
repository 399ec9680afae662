#!/usr/bin/env bash
# make bench: training throughput of BABY / MID / NANO (issue 6) in fp32 and in bf16
# (--precision bf16: train_bf16.csv), this machine's
# matrix-multiply peak, the same models in PyTorch (Debian's python3-torch 1.13 at
# /usr/bin/python3, and PyTorch 2.x from the venv `make bench-deps` makes, each when
# present, in fp32 and in bf16), OpenBLAS sgemm when libopenblas-dev is, sampling
# speed with and without the KV cache, and the byte-pair tokenizer against Hugging
# Face's (scripts/bench_tok.sh), and mixture-of-heads steps against plain ones
# (route.csv), and the built-in corpus's generator and parser (bench/bench_synth.c,
# printed only). Prints tables; writes CSVs to $BENCH_OUT (default
# build/bench). Not a test: nothing here asserts a time.
#   BENCH_CONFIGS=BABY,MID,NANO  BENCH_THREADS=1,2  BENCH_TORCH=auto|0  BENCH_ROUNDS=1
#   BENCH_TORCH1=auto|0: 0 leaves out Debian's PyTorch 1.13 only
#   BENCH_TORCH2=PYTHON: the interpreter with PyTorch 2.x (default
#   $BENCH_VENV/bin/python, BENCH_VENV=.venv-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-build/bench}
configs=${BENCH_CONFIGS:-BABY,MID,NANO}
threads=${BENCH_THREADS:-1,2}
rounds=${BENCH_ROUNDS:-1}
case "$rounds" in
    ''|*[!0-9]*) rounds=0 ;;
esac
if [ "$((10#$rounds))" -lt 1 ]; then
    echo "bench: BENCH_ROUNDS must be a whole number >= 1 (got '${BENCH_ROUNDS:-}')" >&2
    exit 2
fi
rounds=$((10#$rounds))
mkdir -p "$out"

# The PyTorch interpreters: Debian's 1.13, and a 2.x one (BENCH_TORCH2, else the
# bench venv's python when it exists). A BENCH_TORCH2 that names no PyTorch 2.x is
# an error, not a silent skip.
pythons=()
if [ "${BENCH_TORCH:-auto}" != 0 ]; then
    if [ "${BENCH_TORCH1:-auto}" != 0 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
        pythons+=(/usr/bin/python3)
    fi
    py2=${BENCH_TORCH2:-${BENCH_VENV:-.venv-bench}/bin/python}
    is2='import sys, torch; sys.exit(int(torch.__version__.split(".")[0]) < 2)'
    where='import torch; print(torch.__file__)'
    if [ -x "$py2" ] && "$py2" -c "$is2" 2>/dev/null; then
        # Unless it is the same PyTorch as Debian's (a 2.x python3-torch).
        if [ ${#pythons[@]} -eq 0 ] || [ "$("$py2" -c "$where" 2>/dev/null)" != \
             "$(/usr/bin/python3 -c "$where" 2>/dev/null)" ]; then
            pythons+=("$py2")
        fi
    elif [ -n "${BENCH_TORCH2:-}" ]; then
        echo "bench: BENCH_TORCH2=$BENCH_TORCH2 is not a python with PyTorch 2.x" >&2
        exit 2
    fi
fi
# torch.compile's kernels, cached so that only the first round compiles them.
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$(cd "$out" && pwd)/torchinductor}

cflags="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O3 ${ARCH--march=native} -fopenmp -ffp-contract=off -I."

# Both sides wait between OpenMP regions under one policy: the caller's
# (OMP_WAIT_POLICY or GOMP_SPINCOUNT), or else the bounded spin ./train and ./infer
# use by default (GOMP_SPINCOUNT=10000, app/common/cli.c). PyTorch 1.13 measured faster with
# it than with OMP_WAIT_POLICY=PASSIVE on the 2-core Xeon of docs/bench.md.
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then
    export GOMP_SPINCOUNT=10000
fi
policy="OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-unset}"

blas_flags=""
if [ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ] || \
   ls /usr/include/*/openblas*/cblas.h >/dev/null 2>&1; then
    blas_flags="-DHAVE_OPENBLAS -lopenblas"
fi
gcc $cflags bench/bench_matmul.c build/libheadcount.a -lm $blas_flags -o build/bench_matmul \
    2>/dev/null || gcc $cflags bench/bench_matmul.c build/libheadcount.a -lm -o build/bench_matmul
gcc $cflags bench/bench_train.c build/libheadcount.a -lm -o build/bench_train
gcc $cflags bench/bench_bf16.c build/libheadcount.a -lm -o build/bench_bf16
gcc $cflags bench/bench_synth.c build/libheadcount.a -lm -o build/bench_synth
gcc $cflags bench/bench_bf16_copies.c build/libheadcount.a -lm -o build/bench_bf16_copies

echo "== machine"
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /cpu: /'
echo "cores: $(nproc)"
echo "OpenMP waiting (ours and PyTorch): $policy"
# Which code runs --precision bf16 here, and what the emulation costs (kernels/bf16.h).
./build/bench_bf16 --say

echo
echo "== matrix multiply (GFLOP/s; OpenBLAS rows when libopenblas-dev is installed)"
env -u OPENBLAS_CORETYPE ./build/bench_matmul --csv "$out/matmul.csv"

echo
echo "== linear layers in fp32 and bf16 (one thread, thread CPU time)"
./build/bench_bf16
echo
echo "== a bf16 step with the weights' copies written by AdamW, and without (one thread)"
./build/bench_bf16_copies --config BABY --steps 15
./build/bench_bf16_copies --config MID --steps 9
echo
echo "== a bf16 step with the LayerNorms rounding their outputs for the products, and without"
./build/bench_bf16_copies --rows --config BABY --steps 15
./build/bench_bf16_copies --rows --config MID --steps 9

rm -f "$out/train.csv" "$out/train_bf16.csv" "$out/torch.csv" "$out/cpu.csv"
# Whether this CPU has the bf16 units, for the tables (docs/matmul.md, "bf16").
bf16_units=$(grep -ow -m1 'avx512_bf16' /proc/cpuinfo || true)
amx_units=$(grep -ow -m1 'amx_bf16' /proc/cpuinfo || true)
echo "bf16 units: ${bf16_units:-no avx512_bf16}, ${amx_units:-no amx_bf16}" \
    "(ours uses avx512_bf16 only; AMX is not used)"
# The same for the summary's bf16 tables: name,value rows.
{
    echo "name,value"
    echo "cpu,\"$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/"/'"'"'/g')\""
    echo "cores,$(nproc)"
    echo "avx512_bf16,$([ -n "$bf16_units" ] && echo yes || echo no)"
    echo "amx_bf16,$([ -n "$amx_units" ] && echo yes || echo no)"
} > "$out/cpu.csv"
if [ ${#pythons[@]} -gt 0 ]; then
    echo
    echo "== PyTorch"
    for py in "${pythons[@]}"; do
        echo "$py: $(env -u OPENBLAS_CORETYPE "$py" scripts/bench_torch.py --info 2>/dev/null)"
    done
    # Ours and PyTorch take turns, one (configuration, H) at a time, so that each
    # ratio compares runs seconds apart: this host's speed drifts by 20-30% over
    # minutes, which decided the ratios when all of ours ran before all of PyTorch's.
    # With BENCH_ROUNDS=R each configuration takes R such turns in a row, and the
    # summary quotes the median of the R ratios with their range. Each PyTorch runs
    # every variant it has, in fp32 and in bf16 (torch.autocast), one process per
    # thread count (scripts/bench_torch.py).
    echo
    echo "== training steps, ours then each PyTorch (threads $threads,"
    echo "   OPENBLAS_CORETYPE unset), one configuration at a time, $rounds round(s)"
    ours_header=""
    torch_header=""
    for run in $(./build/bench_train --list); do
        case ",$configs," in *",${run%%:*},"*|*",$run,"*) ;; *) continue ;; esac
        for _ in $(seq "$rounds"); do
            ./build/bench_train --configs "$run" --threads "$threads" --csv "$out/train.csv" \
                $ours_header
            ./build/bench_train --configs "$run" --threads "$threads" --precision bf16 \
                --csv "$out/train_bf16.csv" --no-header | sed 's/^/bf16: /'
            ours_header=--no-header
            for py in "${pythons[@]}"; do
                for t in ${threads//,/ }; do
                    env -u OPENBLAS_CORETYPE "$py" scripts/bench_torch.py \
                        --threads "$t" --configs "$run" $torch_header |
                        tee -a "$out/torch.csv" | sed 's/^/torch: /'
                    torch_header=--no-header
                done
            done
        done
    done
else
    echo
    echo "== training steps (ours)"
    for _ in $(seq "$rounds"); do
        ./build/bench_train --configs "$configs" --threads "$threads" --csv "$out/train.csv"
        ./build/bench_train --configs "$configs" --threads "$threads" --precision bf16 \
            --csv "$out/train_bf16.csv" --no-header | sed 's/^/bf16: /'
    done
    echo
    echo "(PyTorch comparison skipped: install Debian's python3-torch, or run"
    echo " make bench-deps for PyTorch 2.x, to include it)"
fi

echo
echo "== training steps against the vocabulary size (BABY H=4, ours; V = 65 is bytes,"
echo "   1024 and 4096 byte-pair vocabularies: a larger output layer and softmax)"
for v in 65 1024 4096; do
    echo "V = $v"
    ./build/bench_train --configs BABY:4 --threads "$threads" --vocab "$v"
done
echo
echo "== mixture of heads (model/route.h): BABY with each token's top K of H heads"
echo "   (cfg BABY/K<k>, route.csv) next to the plain model of H heads and of K heads,"
echo "   one thread, process CPU time (docs/bench.md, \"Routing's cost\")"
rm -f "$out/route.csv"
for hk in 16:4 8:1 8:2; do
    h=${hk%%:*} k=${hk##*:}
    ./build/bench_train --configs "BABY:$h" --threads 1 --cpu --route "$k" \
        --csv "$out/route.csv"
    ./build/bench_train --configs "BABY:$h,BABY:$k" --threads 1 --cpu --no-header \
        --csv "$out/route.csv"
done

echo
echo "== sampling (BABY H=4 checkpoint, 2000 bytes)"
ck="$out/sample.ckpt"
./train --steps 2 --eval-every 0 --save-every 0 --out "$ck" >/dev/null 2>&1
for mode in cache no-cache; do
    flag=""; [ "$mode" = no-cache ] && flag=--no-cache
    line=$(./infer --ckpt "$ck" --tokens 2000 --seed 1 $flag 2>&1 >/dev/null | tail -n 1)
    echo "$mode: $line"
    tps=$(printf '%s\n' "$line" | grep -oE '[0-9.]+ tok/s' | head -n 1 | cut -d' ' -f1)
    echo "$mode,${tps:-}" >> "$out/sample.csv.tmp"
done
{ echo "mode,tokens_per_s"; cat "$out/sample.csv.tmp"; } > "$out/sample.csv"
rm -f "$out/sample.csv.tmp"

echo
bash scripts/bench_tok.sh

echo
echo "== the built-in corpus (one thread, medians of 5 runs): generating 1 MB, parsing it"
echo "   back, and parsing 100 KB of a text it does not understand"
./build/bench_synth --runs 5 --other "${BENCH_TOK_DATA:-../shared/data/tinyshakespeare.txt}"

echo
python3 scripts/bench_report.py "$out"
