#!/bin/sh
# test_asan.sh: builds train, infer and the whole Criterion suite with gcc's
# AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ and runs the
# suite there (its command-line tests run the sanitized programs too). Any
# report stops the process that made it, so it fails its test; leak checking is
# on. Criterion ignores a worker's exit status after its test passed, so a leak
# reported as a worker exits would pass unseen: the output is kept in
# build-asan/test.log and any sanitizer report there fails the script. Extra
# arguments go to run_tests (e.g. --filter 'ckpt/*').
#
# allocator_may_return_null=1 keeps malloc's contract under ASan: the programs
# must turn an impossible allocation into a clean error (tests/test_train.c
# asks for 0.5 TB on purpose), which ASan would otherwise abort on.
# scripts/lsan.supp lists leaks outside our code that LeakSanitizer may report.
set -eu
cd "$(dirname "$0")/.."

SAN="-fsanitize=address,undefined"
start=$(date +%s)
make -s -j"$(nproc 2>/dev/null || echo 2)" BUILD=build-asan BIN=build-asan OPT="-O1 -g -fno-omit-frame-pointer $SAN" \
    LDFLAGS="$SAN" build-asan/train build-asan/infer build-asan/run_tests
built=$(date +%s)

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:allocator_may_return_null=1:abort_on_error=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
root=$(pwd)
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0"
status=0
HEADCOUNT_BIN=build-asan OMP_NUM_THREADS=2 ./build-asan/run_tests --jobs 2 "$@" \
    >build-asan/test.log 2>&1 || status=$?
end=$(date +%s)
grep -v '^\[RUN \]' build-asan/test.log || true
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' build-asan/test.log; then
    echo "test_asan.sh: sanitizer reports above (build-asan/test.log)" >&2
    [ "$status" -ne 0 ] || status=1
fi
echo "test_asan.sh: build $((built - start)) s, tests $((end - built)) s, exit $status" >&2
exit $status
