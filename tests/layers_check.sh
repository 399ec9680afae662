#!/usr/bin/env bash
# make test: the folders are layers (docs/architecture.md) and a file includes only
# from its own folder and the folders below it. app/ holds one room per program
# (train/, infer/), the pages infer writes (report/) and what both programs use
# (common/): the two programs' rooms never include each other. The entry points
# train.c and infer.c include their own room and what lies below it, and define
# nothing but main and static functions, so no call runs from a room up into a
# main. Head measurement lives in analysis/ alone: app/ and the mains call
# heads_measure, never the passes' per-row functions. Prints every breach, and
# exits 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
# folder (or entry point): the folders it may include from, besides itself
declare -A may=(
    [util]=""
    [kernels]="util"
    [model]="util kernels"
    [data]="util"
    [trainer]="util kernels model data"
    [analysis]="util kernels model data"
    [app/common]="util kernels model data trainer analysis"
    [app/report]="util kernels model data trainer analysis app/common"
    [app/train]="util kernels model data trainer analysis app/common"
    [app/infer]="util kernels model data trainer analysis app/common app/report"
    [train.c]="util kernels model data trainer analysis app/common app/train"
    [infer.c]="util kernels model data trainer analysis app/common app/infer app/report"
)
bad=0
# The folder an include names: app/ROOM for the rooms, else its first component.
folder_of() {
    local target=$1
    case $target in
        app/*/*) target=${target#app/}; echo "app/${target%%/*}" ;;
        */*) echo "${target%%/*}" ;;
        *) echo "" ;;
    esac
}
for place in "${!may[@]}"; do
    if [[ $place == *.c ]]; then
        files=("$place")
        self=""
    else
        files=("$place"/*.[ch])
        self=$place
    fi
    for f in "${files[@]}"; do
        [ -e "$f" ] || continue
        while IFS=: read -r line text; do
            target=${text#*\"}
            target=$(folder_of "${target%\"*}")
            case " $self ${may[$place]} " in
                *" $target "*) ;;
                *) echo "layers_check: $f:$line includes from $target/, which $place may not"
                   bad=1 ;;
            esac
        done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+/' "$f" || true)
    done
done
# app/ is only rooms: a file straight in app/ belongs to none.
for f in app/*.[ch]; do
    [ -e "$f" ] || continue
    echo "layers_check: $f lies in app/ itself; put it in the room of the program that uses it"
    bad=1
done
# No head is measured in app/ or the mains: analysis/heads_measure.c runs the
# one pipeline (docs/architecture.md). Outside analysis/ no code (comments aside)
# may name the sums the passes fill or call a function that reads attention
# weights or turns sums into head numbers; the programs call heads_measure and
# read what it fills. Finding a relation's keys in tokens (heads_keys_*,
# heads_rare_*, planted_keys*) is no measurement and stays allowed.
sums='HeadSums|RelationSums|PairSums|CompromiseSums|RouteSums'
passes='heads_add_[a-z_]+|heads_finish|heads_relation_finish|heads_loss|heads_gate_grad'
passes+='|heads_jsd|heads_effective|heads_redundancy|heads_classify|heads_summarise|heads_att'
passes+='|heads_repeat_targets|heads_delim_share|heads_probe_build|heads_probe_alphabet'
passes+='|pairs_add[a-z_]*|pairs_finish|pairs_cost|compromise_add|compromise_finish'
passes+='|compromise_sums_[a-z]+|route_sums_[a-z]+|heads_route_finish'
for f in app/*/*.[ch] train.c infer.c; do
    [ -e "$f" ] || continue
    while IFS=: read -r line text; do
        echo "layers_check: $f:$line measures heads (${text%%[[:space:](]*}): head analysis belongs in" \
             "analysis/; call heads_measure (analysis/heads_measure.h) and read its results"
        bad=1
    done < <(perl -0pe 's{/\*.*?\*/}{$&=~s/[^\n]//gr}gse; s{//[^\n]*}{}g' "$f" |
             grep -n -o -E "\b($sums)\b|\b($passes)[[:space:]]*\(" || true)
done
# An entry point defines main and static functions only: a function declared in
# a room and defined in a main would be a call from the room up into it.
for f in train.c infer.c; do
    while IFS=: read -r line text; do
        echo "layers_check: $f:$line defines a function other code can call ($text); move it" \
             "into the program's room in app/"
        bad=1
    done < <(grep -n -E '^[A-Za-z_][A-Za-z0-9_ \*]*[ \*]([A-Za-z_][A-Za-z0-9_]*)\(' "$f" |
             grep -v -E ':(static |int main\()' || true)
done
if [ "$bad" = 0 ]; then
    echo "layers_check: ok: every include points to its own folder, one below, or (in app/) a" \
         "room it may use; no head is measured outside analysis/; the mains define nothing" \
         "others call"
fi
exit "$bad"
