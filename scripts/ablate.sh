#!/usr/bin/env bash
# make ablation: the head-count ablation (docs/ablation.md). Trains every (arm, H, seed)
# of two arms - fixed width (C = 128, D = C/H) and fixed head size (D = 32) - analyses
# each model's heads on the validation split, and writes ablation.csv, ablation.md,
# plots/*.svg, index.html (the page: the short answer, the figures, every run's heads
# report) and each run under runs/ into --out (default runs/ablation, followed by the
# settings that change a run, e.g. runs/ablation-v1024). It trains on --data FILE, or
# else on train's built-in corpus (--corpus text, the default). With --corpus induction
# it uses that task's recipe (C = 64, D = 16) and also reports, per H, the seeds that
# formed an induction head and when (scripts/induction_phase.py). Rerunning skips
# finished runs and resumes interrupted ones; --print-jobs prints one shell command per
# run for a cluster's scheduler, and --report-only collects their results.
# `scripts/ablate.sh --help` lists the flags; the work is in ablate.py (Python 3, stdlib).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v python3 >/dev/null 2>&1 ||
    { echo "ablate: error: python3 is needed (Debian: apt-get install python3)" >&2; exit 1; }
PYTHONDONTWRITEBYTECODE=1 exec python3 "$here/ablate.py" "$@"
