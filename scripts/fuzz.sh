#!/bin/sh
# fuzz.sh: fuzzes the checkpoint reader (fuzz/fuzz_ckpt.c), then the
# byte-pair tokenizer (fuzz/fuzz_bpe.c) and the CoNLL-U reader
# (fuzz/fuzz_conllu.c) with libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer, each for FUZZ_SECONDS (default 60).
#
# 1. Builds the library sources with clang (CLANG, default clang) and links the
#    targets with -fsanitize=fuzzer,address,undefined into build-fuzz/. ckpt_load
#    runs no parallel code, but kernels/matmul.c calls the OpenMP runtime, so this
#    links LLVM's libomp when present and GCC's libgomp otherwise.
# 2. Writes seeds to fuzz/seeds/ (ignored by git, as *.ckpt): tiny checkpoints
#    written by ./train (built with the normal Makefile into build-fuzz/gcc),
#    byte-level (version 1) and with merges (version 2, --vocab), with training
#    state and, cut down with head/dd exactly as docs/checkpoint.md describes,
#    without it.
# 3. Runs the checkpoint fuzzer. New inputs go to build-fuzz/corpus, crashes to
#    build-fuzz/crash-*. A single allocation over 512 MB counts as a crash: the
#    inputs are small, so only a size taken on trust from a header gets there.
# 4. Runs the two checkpoint readers against each other for FUZZ_SECONDS
#    (fuzz/fuzz_ckpt_py.py): mutants of the seeds and of libFuzzer's corpus go
#    through ckpt_load (fuzz/ckpt_verdicts.c, built with the normal compiler) and
#    through scripts/checkpoint.py, which must accept and refuse the same files
#    with the same message; a disagreement is kept as build-fuzz/py/mismatch.ckpt.
#    Needs python3 (skipped, saying so, without it).
# 5. Runs the tokenizer fuzzer on a few hand-made seeds (fuzz/fuzz_bpe.c says
#    what an input holds); new inputs go to build-fuzz/corpus-bpe, crashes to
#    build-fuzz/bpe-crash-*.
# 6. Runs the CoNLL-U reader's fuzzer (fuzz/fuzz_conllu.c) on hand-made seeds
#    (a sentence with a multiword token, an empty node, no # text, CRLF) and,
#    where ../shared/data/ud-english-ewt is, the treebank's first 200 lines; new
#    inputs go to build-fuzz/corpus-conllu, crashes to build-fuzz/conllu-crash-*.
# Needs Debian's clang and libclang-rt-14-dev (libFuzzer). Exit status: 0 when
# nothing was found, non-zero otherwise.
set -eu
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
CLANG=${CLANG:-clang}
OUT=build-fuzz
SEEDS=fuzz/seeds
mkdir -p "$OUT/obj" "$OUT/corpus" "$SEEDS"

if ! command -v "$CLANG" >/dev/null 2>&1; then
    echo "fuzz.sh: $CLANG not found (apt-get install clang libclang-rt-14-dev)" >&2
    exit 1
fi
probe="$OUT/probe.c"
printf '#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n' >"$probe"
if "$CLANG" -fopenmp "$probe" -o "$OUT/probe" 2>/dev/null; then
    OMPFLAGS="-fopenmp"
elif "$CLANG" -fopenmp=libgomp -isystem "$(gcc -print-file-name=include)" "$probe" \
        -o "$OUT/probe" 2>/dev/null; then
    OMPFLAGS="-fopenmp=libgomp -isystem $(gcc -print-file-name=include)"
else
    echo "fuzz.sh: $CLANG cannot link an OpenMP program (install libomp-dev)" >&2
    exit 1
fi
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe"
if ! "$CLANG" -fsanitize=fuzzer "$probe" -o "$OUT/probe" 2>/dev/null; then
    echo "fuzz.sh: $CLANG has no libFuzzer (apt-get install libclang-rt-14-dev)" >&2
    exit 1
fi

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
# -Wno-psabi: built without AVX, clang warns about every 8-lane vector (vmath.h) passed
# to or returned from a function; they are all static inline, so no ABI is crossed.
CFLAGS="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g -fno-omit-frame-pointer \
-ffp-contract=off -Wno-psabi -I. $OMPFLAGS $SAN"
# Everything is rebuilt when the flags changed or any source or header is newer
# than the last fuzzer binary.
if [ "$(cat "$OUT/obj/flags" 2>/dev/null)" != "$CLANG $CFLAGS" ] || [ ! -f "$OUT/fuzz_ckpt" ] ||
    [ ! -f "$OUT/fuzz_bpe" ] || [ ! -f "$OUT/fuzz_conllu" ] ||
    [ -n "$(find util kernels model data trainer analysis fuzz -name '*.[ch]' -newer "$OUT/fuzz_ckpt")" ]; then
    rm -f "$OUT"/obj/*.o
    echo "$CLANG $CFLAGS" >"$OUT/obj/flags"
fi
objs=""
for src in util/*.c kernels/*.c model/*.c data/*.c trainer/*.c analysis/*.c; do
    obj="$OUT/obj/$(echo "$src" | tr / _ | sed 's/\.c$/.o/')"
    if [ ! -f "$obj" ]; then
        # shellcheck disable=SC2086
        "$CLANG" $CFLAGS -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    fi
    objs="$objs $obj"
done
# The lexicon's table is C that the build generates from data/lexicon.tsv (Makefile,
# lexicon_gen): made here by make in its own directory, compiled like the rest.
make -s BUILD="$OUT/make" "$OUT/make/gen/lexicon_table.c"
# shellcheck disable=SC2086
"$CLANG" $CFLAGS -fsanitize=fuzzer-no-link -c "$OUT/make/gen/lexicon_table.c" \
    -o "$OUT/obj/gen_lexicon_table.o"
objs="$objs $OUT/obj/gen_lexicon_table.o"
# shellcheck disable=SC2086
"$CLANG" $CFLAGS -fsanitize=fuzzer fuzz/fuzz_ckpt.c $objs -lm -o "$OUT/fuzz_ckpt"
# shellcheck disable=SC2086
"$CLANG" $CFLAGS -fsanitize=fuzzer fuzz/fuzz_bpe.c $objs -lm -o "$OUT/fuzz_bpe"
# shellcheck disable=SC2086
"$CLANG" $CFLAGS -fsanitize=fuzzer fuzz/fuzz_conllu.c $objs -lm -o "$OUT/fuzz_conllu"

# Seeds: a few tiny architectures, on text with a 3- and a 9-byte vocabulary.
make -s BUILD="$OUT/gcc" BIN="$OUT/gcc" "$OUT/gcc/train"
i=0
while [ $i -lt 200 ]; do printf 'ab\nba\n'; i=$((i + 1)); done >"$OUT/abc.txt"
i=0
while [ $i -lt 40 ]; do printf 'the cat sat.\nthe hat.\n'; i=$((i + 1)); done >"$OUT/cat.txt"
seed() { # name data flags...
    name=$1 data=$2
    shift 2
    OMP_NUM_THREADS=1 "$OUT/gcc/train" --data "$data" --steps 2 --batch 2 --eval-iters 1 \
        --out "$SEEDS/$name.ckpt" "$@" 2>"$OUT/seed.log" || { cat "$OUT/seed.log" >&2; exit 1; }
    # Params-only copy: the header, byte alphabet, 4M merge bytes (M, header int 10, is
    # 0 in version 1) and 4P parameter bytes, flag bit 0 cleared (bit 1, head gates,
    # kept). A file with state is 1280 + 4M + 4P + (1040 + 8P) bytes.
    size=$(wc -c <"$SEEDS/$name.ckpt")
    m=$(od -An -t d4 -j 40 -N 4 "$SEEDS/$name.ckpt" | tr -d ' ')
    p=$(((size - 2320 - 4 * m) / 12))
    head -c $((1280 + 4 * m + 4 * p)) "$SEEDS/$name.ckpt" >"$SEEDS/$name-params.ckpt"
    flags=$(od -An -t d4 -j 28 -N 4 "$SEEDS/$name.ckpt" | tr -d ' ')
    printf "\\$(printf %03o $((flags & 2)))\\000\\000\\000" |
        dd of="$SEEDS/$name-params.ckpt" bs=1 seek=28 conv=notrunc status=none
}
seed tiny "$OUT/abc.txt" --layers 1 --embd 4 --heads 1 --block 4
seed twolayer "$OUT/abc.txt" --layers 2 --embd 8 --heads 2 --head-size 3 --block 6 --dropout 0.1
seed heads "$OUT/cat.txt" --layers 1 --embd 6 --heads 3 --block 5 --val-frac 0.2
# Version 2: byte-pair merges learned from the text (the 256 byte values + 7 merges).
seed merges "$OUT/cat.txt" --layers 1 --embd 4 --heads 1 --block 4 --vocab 263
# Head gates: header flag bit 1 and gates.log_alpha after lnf.b.
seed gates "$OUT/abc.txt" --layers 2 --embd 4 --heads 2 --block 4 --head-gates 0.01

# Dictionary: the state marker, the magic, and int32 values at the dimension limits.
for token in '"HCSTATE1"' '"\x02\x29\x35\x01"' '"\x01\x00\x00\x00"' '"\x00\x00\xc0\x7f"' \
    '"\x40\x00\x00\x00"' '"\x00\x01\x00\x00"' '"\x00\x10\x00\x00"' '"\x00\x20\x00\x00"' \
    '"\x00\x40\x00\x00"' '"\xff\xff\xff\x7f"' '"\xff\xff\xff\xff"'; do
    echo "$token"
done >"$OUT/ckpt.dict"
echo "fuzz.sh: fuzzing ckpt_load for ${FUZZ_SECONDS}s ($(find "$SEEDS" -type f | wc -l) seeds)" >&2
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$OUT/fuzz_ckpt" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -timeout=10 -max_len=65536 -dict="$OUT/ckpt.dict" -artifact_prefix="$OUT/" \
    -print_final_stats=1 "$OUT/corpus" "$SEEDS"

if command -v python3 >/dev/null 2>&1; then
    cc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -fopenmp -I. \
        fuzz/ckpt_verdicts.c "$OUT/gcc/libheadcount.a" -lm -o "$OUT/ckpt_verdicts"
    echo "fuzz.sh: the C and Python checkpoint readers against each other for ${FUZZ_SECONDS}s" >&2
    python3 fuzz/fuzz_ckpt_py.py "$OUT/ckpt_verdicts" "$FUZZ_SECONDS" "$OUT/py" "$SEEDS" \
        "$OUT/corpus"
else
    echo "fuzz.sh: python3 not found: the Python checkpoint reader is not fuzzed" >&2
fi

# Tokenizer seeds: header (mode and merges, training length, marker), then text.
mkdir -p "$OUT/corpus-bpe" "$OUT/seeds-bpe"
printf '\100\030\000\000the cat sat on the mat.\nthe hat\nthe cat  sat' >"$OUT/seeds-bpe/words"
printf '\040\014\000\000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab' >"$OUT/seeds-bpe/overlap"
printf '\041\020\000\000abcdefghijklmnop' >"$OUT/seeds-bpe/list"
printf '\200\040\000\000  \n\n  x 12,345 !! \303\251t\303\251 \t\r\n  end' >"$OUT/seeds-bpe/classes"
echo "fuzz.sh: fuzzing the byte-pair tokenizer for ${FUZZ_SECONDS}s" >&2
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$OUT/fuzz_bpe" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -timeout=10 -max_len=8192 -artifact_prefix="$OUT/bpe-" -print_final_stats=1 \
    "$OUT/corpus-bpe" "$OUT/seeds-bpe"

# CoNLL-U seeds: small files by hand, and the real treebank's head where it is.
mkdir -p "$OUT/corpus-conllu" "$OUT/seeds-conllu"
printf '# text = I don'"'"'t go.\n1\tI\tI\tPRON\t_\t_\t4\tnsubj\t_\t_\n2-3\tdon'"'"'t\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdo\tdo\tAUX\t_\t_\t4\taux\t_\t_\n3\tn'"'"'t\tnot\tPART\t_\t_\t4\tadvmod\t_\t_\n4\tgo\tgo\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No\n4.1\tgo\tgo\tVERB\t_\t_\t_\t_\t4:conj\t_\n5\t.\t.\tPUNCT\t_\t_\t4\tpunct\t_\t_\n\n' \
    >"$OUT/seeds-conllu/mwt"
printf '1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No\r\n2\t!\t!\tPUNCT\t_\t_\t1\tpunct\t_\t_\r\n\r\n' \
    >"$OUT/seeds-conllu/crlf"
EWT=../shared/data/ud-english-ewt/en_ewt-ud-dev.conllu
if [ -f "$EWT" ]; then
    head -n 200 "$EWT" >"$OUT/seeds-conllu/ewt"
else
    echo "fuzz.sh: $EWT is absent: the CoNLL-U fuzzer starts from the hand-made seeds only" >&2
fi
echo "fuzz.sh: fuzzing the CoNLL-U reader for ${FUZZ_SECONDS}s" >&2
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$OUT/fuzz_conllu" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -timeout=10 -max_len=65536 -artifact_prefix="$OUT/conllu-" -print_final_stats=1 \
    "$OUT/corpus-conllu" "$OUT/seeds-conllu"
