#!/usr/bin/env bash
# make test: the word table's build step (scripts/lexicon/lexicon_gen.c, run by the
# Makefile) on damaged copies of data/lexicon.tsv. Each must stop the build with
# exactly one line from lexicon_gen naming the file, a non-zero exit, and no table
# written; the real table must pass, and give the same bytes twice. The first two
# cases go through `make LEXICON=...` in a build folder of their own (only the
# small generator is built there); the rest call the generator directly.
# Usage: tests/lexicon_check.sh WORKDIR. Prints every failure; exits 1 if any.
set -uo pipefail
cd "$(dirname "$0")/.."
work=${1:?usage: tests/lexicon_check.sh WORKDIR}
rm -rf "$work"
mkdir -p "$work/cases"
table=data/lexicon.tsv
gen=$work/build/lexicon_gen
bad=0

fail() { echo "lexicon_check: $*"; bad=1; }

# expect_one_line NAME STDERR_FILE RC OUT: one error line from lexicon_gen, rc != 0,
# and no output file.
expect_one_line() {
    local name=$1 err=$2 rc=$3 out=$4 lines
    lines=$(grep -c '^lexicon_gen: error: ' "$err")
    if [ "$rc" = 0 ]; then
        fail "$name: exit 0, expected a failure"
    elif [ "$lines" != 1 ]; then
        fail "$name: $lines lines from lexicon_gen, expected 1: $(head -c 300 "$err")"
    elif [ -e "$out" ]; then
        fail "$name: $out was written"
    fi
}

# Through make: a damaged table, then a missing one.
head -c 5000 "$table" >"$work/cases/truncated.tsv"
make -s --no-print-directory BUILD="$work/build" LEXICON="$work/cases/truncated.tsv" \
    "$work/build/gen/lexicon_table.c" >"$work/make.out" 2>"$work/make.err"
expect_one_line "make LEXICON=truncated" "$work/make.err" $? "$work/build/gen/lexicon_table.c"
grep -q 'truncated.tsv' "$work/make.err" || fail "make LEXICON=truncated: the line does not name the file"
make -s --no-print-directory BUILD="$work/build" LEXICON="$work/cases/absent.tsv" \
    "$work/build/gen/lexicon_table.c" >"$work/make.out" 2>"$work/make.err"
expect_one_line "make LEXICON=absent" "$work/make.err" $? "$work/build/gen/lexicon_table.c"
[ -x "$gen" ] || { echo "lexicon_check: make did not build $gen"; exit 1; }

# case NAME: the file $work/cases/NAME.tsv, made by the caller, must fail.
case_fails() {
    local name=$1 out=$work/cases/$1.c
    "$gen" "$work/cases/$name.tsv" "$out" 2>"$work/cases/$name.err"
    expect_one_line "$name" "$work/cases/$name.err" $? "$out"
}
# edit NAME SED_SCRIPT: a copy of the table with one sed edit, which must fail.
edit() {
    sed "$2" "$table" >"$work/cases/$1.tsv"
    cmp -s "$table" "$work/cases/$1.tsv" && fail "$1: the edit changed nothing"
    case_fails "$1"
}
first_noun=$(grep -n -m1 -P '^noun\t' "$table" | cut -d: -f1)
first_verb=$(grep -n -m1 -P '^verb\t' "$table" | cut -d: -f1)

: >"$work/cases/empty.tsv"; case_fails empty
printf 'noun\tcat\tcats\t-\tanimate,animal\t60300' >"$work/cases/no_newline.tsv"; case_fails no_newline
edit five_columns "${first_noun}s/\t[^\t]*\$//"
edit seven_columns "${first_noun}s/\$/\tx/"
edit unknown_class "${first_noun}s/^noun/nounn/"
edit capital_word "${first_noun}s/^noun\t\([a-z]\)/noun\t\U\1/"
edit bad_freq "${first_noun}s/\t[0-9]*\$/\t12x/"
edit zero_freq "${first_noun}s/\t[0-9]*\$/\t0/"
edit huge_freq "${first_noun}s/\t[0-9]*\$/\t99999999999/"
edit unknown_tag "${first_noun}s/\tinanimate,/\tinanimat,/;${first_noun}s/\tanimate,/\tanimat,/"
edit tag_wrong_class "${first_verb}s/\t\(\(in\)\{0,1\}trans\)/\tmass,\1/"
edit noun_no_animacy "${first_noun}s/\t\(in\)\{0,1\}animate,/\t/"
edit verb_no_past "${first_verb}s/^\(verb\t[a-z]*\t[a-z]*\t\)[a-z]*/\1-/"
edit crlf "${first_noun}s/\$/\r/"
edit empty_line "${first_noun}s/^/\n/"
edit duplicate "${first_noun}p"
edit out_of_order "${first_noun}{h;d};$((first_noun + 1))G"
edit class_order "${first_verb}{h;d};\$G"
edit shared_form "${first_verb}s/^\(verb\t[a-z]*\t[a-z]*\t\)[a-z]*/\1$(sed -n "${first_noun}p" "$table" | cut -f2)/"
# Too few nouns: keep the first 100.
awk -F'\t' '$1 == "noun" && ++n > 100 { next } { print }' "$table" >"$work/cases/few_nouns.tsv"
case_fails few_nouns
grep -q 'nouns, expected at least' "$work/cases/few_nouns.err" || fail "few_nouns: $(cat "$work/cases/few_nouns.err")"

# The real table passes, twice the same bytes.
if ! "$gen" "$table" "$work/a.c" 2>"$work/a.err" || ! "$gen" "$table" "$work/b.c"; then
    fail "data/lexicon.tsv refused: $(cat "$work/a.err")"
elif ! cmp -s "$work/a.c" "$work/b.c"; then
    fail "two runs on data/lexicon.tsv wrote different bytes"
fi

n=$(ls "$work"/cases/*.tsv | wc -l)
if [ "$bad" = 0 ]; then
    echo "lexicon_check: ok: $n damaged or missing tables each stop the build with one line;" \
         "data/lexicon.tsv passes, the same bytes twice"
fi
exit "$bad"
