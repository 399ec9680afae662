#!/usr/bin/env bash
# arch_check: the matmul paths give the same bits. On a CPU with AVX-512, the build
# under test (ARCH, default -march=native: the AVX-512 tile) and a build of the other
# tile from the same sources (the AVX2 tile with ARCH="-mavx2 -mfma", or the AVX-512
# one when ARCH does not target it) train the same short runs, and so does the
# portable C path with FMA (ARCH=-mfma) on two of them; every checkpoint must equal
# the build under test's byte for byte, and so must a sample drawn from it. The
# --precision bf16 runs compare the VDPBF16PS kernel (a build under test that
# targets AVX512_BF16) with the fmaf emulation of the AVX2 and portable builds
# (kernels/bf16.h). Run by
# `make test` (about 30 s: two builds of ./train and ./infer, then short runs). On a
# CPU without AVX-512 there is no other tile to compare against here: it says so
# plainly and passes.
# usage: tests/arch_check.sh [BIN_DIR] [WORK_DIR]   (env: CC, ARCH as for make)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.}
work=${2:-build/arch-check}
cc=${CC:-cc}
arch=${ARCH--march=native}
say() { echo "arch_check: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

if ! grep -qw avx512f /proc/cpuinfo 2>/dev/null || ! grep -qw avx512vl /proc/cpuinfo; then
    say "SKIPPED: this CPU has no AVX-512 (avx512f and avx512vl), so the AVX-512 tile"
    say "cannot run here and its checkpoints were not compared with the AVX2 build's."
    exit 0
fi

# shellcheck disable=SC2086
targets512() { "$cc" $1 -dM -E - </dev/null | grep -c '__AVX512VL__' >/dev/null; }
if targets512 "$arch"; then
    other="-mavx2 -mfma"
    say "build under test: AVX-512 tile (ARCH='$arch'); comparing with the AVX2 tile"
else
    other="-march=native"
    targets512 "$other" || fail "-march=native does not target AVX-512 on an AVX-512 CPU"
    say "build under test: ARCH='$arch' (no AVX-512); comparing with the AVX-512 tile"
fi

# shellcheck disable=SC2086
if "$cc" $arch -dM -E - </dev/null | grep -c '__AVX512BF16__' >/dev/null; then
    say "bf16 runs: the build under test's VDPBF16PS kernel against the emulation"
else
    say "bf16 runs: this build does not target AVX512_BF16; emulation against emulation"
fi

rm -rf "$work"
mkdir -p "$work"
t0=$(date +%s)
for v in other:"$other" portable:-mfma; do
    name=${v%%:*} flags=${v#*:}
    make -s BUILD="$work/$name" BIN="$work/$name" ARCH="$flags" \
        "$work/$name/train" "$work/$name/infer" >"$work/$name.make.log" 2>&1 ||
        { cat "$work/$name.make.log" >&2; fail "building the $name path (ARCH='$flags')"; }
done
say "built the other tile and the portable path in $(( $(date +%s) - t0 )) s"

# Short runs that reach every kind of tile: 1, 4 and 16 heads (head sizes 128, 32
# and 8), dropout, widths that are not multiples of 32 (C = 96 over 3 heads, T = 40),
# head gates with same-initialised heads and head dropout, and tiny Shakespeare
# (V = 65) when ../shared has it; then bf16 products with 4 heads and with the odd
# widths.
runs=("-H 1" "-H 4 --dropout 0.1" "-H 16" "-C 96 -H 3 -T 40 -L 2"
      "-H 8 --head-gates 0.01 --init-heads same --head-dropout 0.2" "-H 4 --precision bf16"
      "-C 96 -H 3 -T 40 -L 2 --precision bf16")
shakespeare=../shared/data/tinyshakespeare.txt
[ -r "$shakespeare" ] && runs+=("--data $shakespeare -H 4")
common="--steps 6 --eval-every 3 --eval-iters 2 --val-frac 0.005 -B 6 --save-every 0 --seed 7"
export OMP_WAIT_POLICY=passive
n=0
for flags in "${runs[@]}"; do
    n=$((n + 1))
    builds=(test:"$bin" other:"$work/other")
    # The portable path is ~10x slower: three runs (every kind of tile, and bf16)
    # keep this short.
    [ $n = 2 ] || [ $n = 4 ] || [ $n = 6 ] && builds+=(portable:"$work/portable")
    for b in "${builds[@]}"; do
        name=${b%%:*} dir=${b#*:}
        # shellcheck disable=SC2086
        "$dir/train" $common $flags --out "$work/$name.$n.ckpt" >/dev/null 2>"$work/$name.$n.log" ||
            { cat "$work/$name.$n.log" >&2; fail "$name: train $flags"; }
        "$dir/infer" --ckpt "$work/$name.$n.ckpt" --tokens 120 --seed 3 \
            >"$work/$name.$n.txt" 2>/dev/null || fail "$name: infer on run $n"
        [ "$name" = test ] && continue
        cmp -s "$work/test.$n.ckpt" "$work/$name.$n.ckpt" ||
            fail "checkpoints differ: train $flags, build under test vs $name path"
        cmp -s "$work/test.$n.txt" "$work/$name.$n.txt" ||
            fail "samples differ: train $flags, build under test vs $name path"
    done
    say "same checkpoint and sample from ${#builds[@]} builds: $flags"
done
say "passed in $(( $(date +%s) - t0 )) s"
