#!/usr/bin/env bash
# make test-mpi: ./train over MPI ranks (make MPI=1, built into build-mpi/), on one
# machine with mpirun --oversubscribe. Checks, each against a one-process run:
#   - mpirun -np 2 equals --accum 2, and -np 2 --accum 2 equals --accum 4 (cmp);
#   - a run started on one process resumes on 2 ranks, and one started on 2 ranks
#     on 4 and on 1, with the same bits as an uninterrupted run;
#   - SIGINT to one rank stops every rank at the same step, rank 0 saves once,
#     the job exits 130, and the checkpoint is whole;
#   - --heads-every logs the same head metrics on 2 ranks as with --accum 2;
#   - ranks that read different data refuse to train, naming the rank;
#   - a rank that dies ends the job (no hang), leaving the last good checkpoint.
# Skips, saying so, when Open MPI is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "mpi_check: SKIPPED: Open MPI is not installed (apt-get install libopenmpi-dev openmpi-bin)"
    exit 0
fi
make -s MPI=1 BUILD=build-mpi BIN=build-mpi build-mpi/train
bin=$PWD/build-mpi/train
work=build-mpi/check
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
mpi=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
fails=0
pass() { echo "mpi_check: ok: $*"; }
fail() { echo "mpi_check: FAILED: $*"; fails=$((fails + 1)); }
same() { # a b what
    if cmp -s "$1" "$2"; then pass "$3"; else fail "$3 ($1 and $2 differ)"; fi
}
# Steps trained, from header int 8 (offset 32) of a checkpoint.
steps_of() { od -An -t d4 -j 32 -N 4 "$1" | tr -d ' '; }

# Tiny model on the built-in corpus; warm-up beyond the last step keeps the
# schedule independent of --steps, so a resumed run can be compared.
F=(-L 1 -C 32 -H 4 -T 32 -B 4 --warmup 100 --eval-every 4 --eval-iters 2 --dropout 0.1)

./train "${F[@]}" --steps 8 --accum 2 --out "$work/a2.ckpt" 2>/dev/null
"${mpi[@]}" -np 2 "$bin" "${F[@]}" --steps 8 --out "$work/n2.ckpt" 2>"$work/n2.err"
same "$work/a2.ckpt" "$work/n2.ckpt" "mpirun -np 2 equals --accum 2"

./train "${F[@]}" --steps 8 --accum 4 --out "$work/a4.ckpt" 2>/dev/null
"${mpi[@]}" -np 2 "$bin" "${F[@]}" --steps 8 --accum 2 --out "$work/n2a2.ckpt" 2>/dev/null
same "$work/a4.ckpt" "$work/n2a2.ckpt" "mpirun -np 2 --accum 2 equals --accum 4"

./train "${F[@]}" --steps 4 --accum 4 --out "$work/r1.ckpt" 2>/dev/null
"${mpi[@]}" -np 2 "$bin" --resume "$work/r1.ckpt" --steps 8 2>/dev/null
same "$work/a4.ckpt" "$work/r1.ckpt" "a 1-process run resumed on 2 ranks"
"${mpi[@]}" -np 2 "$bin" "${F[@]}" --steps 2 --accum 2 --out "$work/r2.ckpt" 2>/dev/null
"${mpi[@]}" -np 4 "$bin" --resume "$work/r2.ckpt" --steps 5 2>/dev/null
./train --resume "$work/r2.ckpt" --steps 8 2>/dev/null
same "$work/a4.ckpt" "$work/r2.ckpt" "a 2-rank run resumed on 4 ranks, then on 1 process"

# Only rank 0 logs: one record per step.
"${mpi[@]}" -np 2 "$bin" "${F[@]}" --steps 3 --out "$work/log.ckpt" --log "$work/log.jsonl" \
    2>/dev/null
n=$(grep -c '"type":"step"' "$work/log.jsonl")
if [ "$n" = 3 ]; then pass "one log, written by rank 0"; else fail "the log has $n step records, not 3"; fi

# --heads-every measures the step's first micro-batch, rank 0's first under MPI, so
# the heads records of -np 2 equal those of --accum 2.
./train "${F[@]}" --steps 4 --accum 2 --heads-every 2 --out "$work/ha.ckpt" \
    --log "$work/ha.jsonl" 2>/dev/null
"${mpi[@]}" -np 2 "$bin" "${F[@]}" --steps 4 --heads-every 2 --out "$work/hn.ckpt" \
    --log "$work/hn.jsonl" 2>/dev/null
if [ "$(grep -c '"type":"heads"' "$work/ha.jsonl")" -ge 2 ] &&
    cmp -s <(grep '"type":"heads"' "$work/ha.jsonl") <(grep '"type":"heads"' "$work/hn.jsonl"); then
    pass "--heads-every logs the same heads records on 2 ranks as with --accum 2"
else
    fail "--heads-every: the heads records of -np 2 and --accum 2 differ"
fi

# Different data on the ranks: refused before training, naming the rank.
head -c 30000 /dev/zero | tr '\0' 'a' >"$work/d0.txt"
printf 'ab\n%.0s' $(seq 1 10000) >"$work/d1.txt"
if "${mpi[@]}" -np 2 sh -c "exec $bin ${F[*]} --steps 2 --data $work/d\$OMPI_COMM_WORLD_RANK.txt \
        --out $work/mismatch.ckpt" >"$work/mismatch.out" 2>&1; then
    fail "ranks with different data trained"
elif grep -q "rank 1 as" "$work/mismatch.out" && [ ! -e "$work/mismatch.ckpt" ]; then
    pass "ranks with different data refuse to train"
else
    fail "no clear message for different data:"; cat "$work/mismatch.out"
fi

# Long runs for the signal and dead-rank checks; returns once step 1 is printed.
start_long() { # out err
    "${mpi[@]}" -np 2 "$bin" "${F[@]}" --steps 100000000 --save-every 50 --eval-every 0 \
        --out "$1" 2>"$2" &
    job=$!
    for _ in $(seq 1 600); do
        grep -q '^step 1/' "$2" 2>/dev/null && break
        sleep 0.05
    done
    sleep 0.5
    rank1=$(pgrep -f -- "--out $1" | while read -r p; do
        [ "$(tr '\0' '\n' </proc/"$p"/environ 2>/dev/null | grep -c '^OMPI_COMM_WORLD_RANK=1$')" = 1 ] && echo "$p"
    done | head -1)
}

start_long "$work/sig.ckpt" "$work/sig.err"
if [ -z "$rank1" ]; then
    fail "could not find rank 1"; kill -INT "$job" || true
else
    kill -INT "$rank1"
fi
rc=0
wait "$job" || rc=$?
saves=$(grep -c 'interrupted at step' "$work/sig.err" || true)
at=$(sed -n 's/.*interrupted at step \([0-9]*\).*/\1/p' "$work/sig.err" | head -1)
if [ "$rc" = 130 ] && [ "$saves" = 1 ] && [ -n "$at" ] && [ "$(steps_of "$work/sig.ckpt")" = "$at" ] &&
    ./train --resume "$work/sig.ckpt" --steps $((at + 1)) --out "$work/sig2.ckpt" 2>/dev/null; then
    pass "SIGINT to rank 1 stops both ranks at step $at, one save, exit 130"
else
    fail "SIGINT to one rank: exit $rc, $saves save messages, step '$at':"; cat "$work/sig.err"
fi

start_long "$work/dead.ckpt" "$work/dead.err"
if [ -n "$rank1" ]; then
    kill -KILL "$rank1"
    rc=0
    for _ in $(seq 1 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$job" 2>/dev/null; then
        fail "the job hangs after rank 1 died"; kill -KILL "$job" || true
    else
        wait "$job" || rc=$?
        if [ "$rc" != 0 ]; then pass "a dead rank ends the job (exit $rc, no hang)"; else fail "exit 0 after a rank died"; fi
    fi
else
    fail "could not find rank 1"; kill -KILL "$job" || true
fi

if [ "$fails" -gt 0 ]; then
    echo "mpi_check: $fails check(s) failed"
    exit 1
fi
echo "mpi_check: all checks passed"
