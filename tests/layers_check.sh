#!/usr/bin/env bash
# make test: the folders are layers (docs/architecture.md) and a file includes only
# from its own folder and the folders below it. Prints every include that points
# up or sideways, and exits 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
# folder: the folders it may include from, besides itself
declare -A may=(
    [util]=""
    [kernels]="util"
    [model]="util kernels"
    [data]="util"
    [trainer]="util kernels model data"
    [analysis]="util kernels model data"
    [app]="util kernels model data trainer analysis"
)
bad=0
for dir in "${!may[@]}"; do
    for f in "$dir"/*.[ch]; do
        [ -e "$f" ] || continue
        while IFS=: read -r line text; do
            target=${text#*\"}
            target=${target%%/*}
            case " $dir ${may[$dir]} " in
                *" $target "*) ;;
                *) echo "layers_check: $f:$line includes from $target/, which $dir/ may not"
                   bad=1 ;;
            esac
        done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]+/' "$f" || true)
    done
done
if [ "$bad" = 0 ]; then
    echo "layers_check: ok: every include points to its own folder or one below"
fi
exit "$bad"
