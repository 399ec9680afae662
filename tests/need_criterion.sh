#!/usr/bin/env bash
# make test's set-up: the Criterion test framework, which the suite is written in.
# Found when its header is there (CRITERION_H, default /usr/include/criterion/criterion.h).
# Otherwise, on a Debian or Ubuntu machine, it installs libcriterion-dev with apt-get
# (apt-get update first) when it can: as root, or through sudo without a password.
# When it cannot, it stops (exit 1) with the one command to run. It asks nothing
# interactively, so make never waits on a password prompt.
# tests/need_criterion_check.sh runs it against fake apt-get, sudo and id.
set -euo pipefail
header=${CRITERION_H:-/usr/include/criterion/criterion.h}
[ -f "$header" ] && exit 0
say() { echo "make test: $*" >&2; }
install="apt-get update && apt-get install -y libcriterion-dev"
if ! command -v apt-get >/dev/null 2>&1; then
    say "Criterion is missing ($header) and this machine has no apt-get: install Criterion" \
        "(libcriterion-dev, or https://github.com/Snaipe/Criterion) and run make test again"
    exit 1
fi
if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    say "Criterion is missing ($header); install it with: sudo sh -c '$install'"
    exit 1
fi
say "Criterion is missing ($header): ${as_root[*]:+${as_root[*]} }$install"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q libcriterion-dev
[ -f "$header" ] || { say "libcriterion-dev is installed, but $header is still missing"; exit 1; }
