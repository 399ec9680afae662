#!/usr/bin/env bash
# make ablation: the head-count ablation of issue 5. Trains every (arm, H, seed) of
# two arms - fixed width (C = 128, D = C/H) and fixed head size (D = 32) - scores each
# model on the validation split, analyses its heads, and writes ablation.csv,
# ablation.md, plots/*.svg and index.html into --out (default runs/ablation).
# Rerunning skips finished runs and resumes interrupted ones from their checkpoints.
#
#   scripts/ablate.sh [--data FILE] [--out DIR] [--heads "1 4 8 16"] [--seeds 3]
#                     [--arm width|headsize|both] [--steps 2000] [--jobs N] [--threads N]
#                     [--quick | --long] [--bin DIR] [--check] [--report-only]
#
# The orchestration (parallel runs, resume, progress, ETA) is in ablate_sweep.py and
# the report in ablate_report.py: Python 3 with its standard library only.
# `scripts/ablate.sh --help` lists every flag; docs/ablation.md explains the design.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v python3 >/dev/null 2>&1; then
    echo "ablate: error: python3 is needed (Debian: apt-get install python3)" >&2
    exit 1
fi
PYTHONDONTWRITEBYTECODE=1 exec python3 "$here/ablate_sweep.py" "$@"
