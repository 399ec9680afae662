#!/usr/bin/env bash
# The README walk (make test-readme; CI): every command block of README.md (```sh and
# ```python), in order, as written, in a clean export of the tree (its tracked files,
# with the working tree's changes, as `git archive` writes them: the modes git keeps),
# the way a new user runs them after cloning. A command that fails fails the check,
# naming the block and the line.
#
# What differs from a user's walk, and why:
#   - HEADCOUNT_TEST_STEPS (a setting ./train honours for tests alone, README does not
#     show it) caps every training at $steps steps, so the walk takes minutes, not hours;
#   - tiny Shakespeare (../shared/data/tinyshakespeare.txt) stands in for the curl
#     download (no network in CI); without it the check skips, saying so;
#   - the lines of SKIP below are not run, each for the reason it gives;
#   - the ablation sweeps run with --print-jobs (their plan: every run's command) in
#     place of the runs: each trains 18 to 80 models; tests/ablation_check.sh runs the
#     pipeline end to end on tiny settings;
#   - the ```python block runs where python3 imports torch, and is skipped otherwise.
# Also: every script README runs by its path (scripts/x at the start of a command) is
# executable in git (mode 100755), and no two ./train lines train the same model.
#   tests/readme_check.sh [WORK_DIR]   (default build/test-readme)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(realpath -m "${1:-build/test-readme}")
steps=${README_STEPS:-60}
shakespeare=$repo/../shared/data/tinyshakespeare.txt
say() { echo "readme_check: $*" >&2; }
fail() { echo "readme_check: FAIL: $*" >&2; exit 1; }

if [ ! -f "$shakespeare" ]; then
    say "skipped: no $shakespeare (tiny Shakespeare stands in for README's download)"
    exit 0
fi
rm -rf "$work"
mkdir -p "$work/tree"

# The lines not run, and why (matched whole, after trimming the comment).
declare -A SKIP=(
    ["make test"]="the test suite: this check is part of CI beside it"
    ["make bench-deps && BENCH_ROUNDS=5 make bench"]="downloads PyTorch and times for tens of minutes"
)
# The lines run with --print-jobs: the sweeps' plans, not their runs.
sweep_line() { [[ $1 == "make ablation"* || $1 == "scripts/ablate.sh "* ]]; }

# A clean export: the tracked files as they are in the working tree (git stash create
# records them without touching anything), with git's modes.
tree=$(git stash create)
git archive --format=tar "${tree:-HEAD}" | tar -x -C "$work/tree"

# The command blocks, in order: one file per block, its language in the name.
python3 - "$repo/README.md" "$work" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"^```(sh|python)\n(.*?)^```", text, re.M | re.S)
for n, (lang, body) in enumerate(blocks, 1):
    open("%s/block-%02d.%s" % (sys.argv[2], n, lang), "w").write(body)
print(len(blocks), file=sys.stderr)
EOF

# Scripts README runs by path must be executable as git keeps them.
for s in $(cat "$work"/block-*.sh | sed -e 's/#.*//' | tr ';&|' '\n\n\n' |
           sed -n -E 's/^[[:space:]]*(scripts\/[A-Za-z0-9_.-]+).*/\1/p' | sort -u); do
    mode=$(git ls-files -s "$s" | cut -d' ' -f1)
    [ "$mode" = 100755 ] || fail "README runs $s, whose git mode is ${mode:-missing}, not 100755"
    head -c2 "$s" | grep -q '#!' || fail "README runs $s, which has no #! line"
done
# No two ./train lines train the same model (the same flags but the output's).
dups=$(cat "$work"/block-*.sh | sed -e 's/#.*//; s/&&/\n/g; s/;/\n/g' | sed -E 's/^[[:space:]]+//' |
       grep -E '^\./train( |$)' |
       grep -v -- '--dump-val' | sed -E 's/ (--out|-o) [^ ]+//; s/ +$//' | sort | uniq -d)
[ -z "$dups" ] || fail "README trains the same model twice: $dups"

cp "$shakespeare" "$work/tree/input.txt.download"
# The treebank's copy beside the checkout stands in for README's downloads of it; without
# it the lines that read a .conllu file are skipped, saying so.
treebank=$repo/../shared/data/ud-english-ewt
for f in en_ewt-ud-train.conllu en_ewt-ud-dev.conllu; do
    [ -f "$treebank/$f" ] && cp "$treebank/$f" "$work/tree/$f.download"
done
export HEADCOUNT_TEST_STEPS=$steps OMP_WAIT_POLICY=passive MAKEFLAGS=-j2
t0=$(date +%s)
for f in "$work"/block-*; do
    name=$(basename "$f")
    if [[ $f == *.python ]]; then
        if python3 -c 'import torch' 2>/dev/null; then
            say "$name: python3"
            (cd "$work/tree" && python3 "$f") >"$work/$name.out" 2>&1 ||
                { cat "$work/$name.out" >&2; fail "$name (python) failed"; }
        else
            say "$name: skipped: python3 cannot import torch (Debian: apt-get install python3-torch)"
        fi
        continue
    fi
    while IFS= read -r line; do
        cmd=$(sed -E 's/[[:space:]]+#.*$//; s/^#.*$//; s/[[:space:]]+$//' <<<"$line")
        [ -n "$cmd" ] || continue
        if [ -n "${SKIP[$cmd]+x}" ]; then
            say "$name: skipped: $cmd (${SKIP[$cmd]})"
            continue
        fi
        if [[ $cmd == curl*.conllu || ( $cmd == *.conllu* && ! -f $treebank/en_ewt-ud-train.conllu ) ]]; then
            file=$(grep -oE '[A-Za-z0-9_.-]+\.conllu' <<<"$cmd" | head -n1)
            if [ ! -f "$work/tree/$file.download" ] && [[ $cmd == curl* ]] ||
               [ ! -f "$treebank/en_ewt-ud-train.conllu" ]; then
                say "$name: skipped: $cmd (no $treebank to stand in for the treebank's download)"
                continue
            fi
            say "$name: $cmd (the treebank from ../shared stands in)"
            cmd="cp $file.download $file"
        elif [[ $cmd == curl* ]]; then
            say "$name: $cmd (tiny Shakespeare from ../shared stands in)"
            cmd="cp input.txt.download input.txt"
        elif sweep_line "$cmd"; then
            if [[ $cmd == make* ]]; then
                cmd="$cmd ABLATION_FLAGS=--print-jobs"
            else
                cmd="$cmd --print-jobs"
            fi
            say "$name: $cmd (the sweep's plan)"
        else
            say "$name: $cmd"
        fi
        t=$(date +%s)
        (cd "$work/tree" && bash -eo pipefail -c "$cmd") >"$work/last.out" 2>&1 || {
            tail -n 30 "$work/last.out" >&2
            fail "$name: '$cmd' exited $?"
        }
        say "    $(( $(date +%s) - t )) s"
    done <"$f"
done

# What the walk promised: the checkpoints it trained once and reused, the pages.
for out in headcount.ckpt shakespeare.ckpt h1.ckpt h16.ckpt my.html compare.html \
           plots/index.html word-heads/index.html; do
    [ -s "$work/tree/$out" ] || fail "the walk did not write $out"
done
say "every command block ran ($(( $(date +%s) - t0 )) s, training capped at $steps steps)"
