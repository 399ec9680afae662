#!/usr/bin/env bash
# tests/need_criterion.sh (make test's set-up) against fakes: CRITERION_H points at a
# header in a scratch directory, and PATH holds only fake id, sudo and apt-get (which
# log their calls, and "install" by creating that header) plus env. Checked: a present
# header is all it needs; a missing one is installed with apt-get update then install,
# as root or through passwordless sudo; without either, or without apt-get, it stops
# with exit 1 and the command to run, calling nothing; a package that leaves the
# header missing is an error. The machine's own packages are never touched.
# usage: tests/need_criterion_check.sh [WORK_DIR]   (default build/need-criterion-check)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(realpath -m "${1:-build/need-criterion-check}")
rm -rf "$work"
mkdir -p "$work/bin"
fail() { echo "need_criterion_check: FAIL: $*" >&2; exit 1; }
bash=$(command -v bash)
ln -s "$(command -v env)" "$work/bin/env"
cat >"$work/bin/id" <<EOF
#!$bash
echo "\$FAKE_UID"
EOF
cat >"$work/bin/sudo" <<EOF
#!$bash
echo "sudo \$*" >>"$work/calls"
[ "\$1" = -n ] && shift
[ "\$FAKE_SUDO" = nopasswd ] || exit 1
[ "\$1" = true ] && exit 0
exec "\$@"
EOF
cat >"$work/bin/apt-get" <<EOF
#!$bash
echo "\$DEBIAN_FRONTEND apt-get \$*" >>"$work/calls"
[ "\$1" = install ] && [ "\$FAKE_INSTALL" = works ] && : >"$work/criterion.h"
exit 0
EOF
chmod +x "$work/bin/id" "$work/bin/sudo" "$work/bin/apt-get"

# run UID SUDO INSTALL: the script's exit status in $rc, its stderr in $err, the fakes'
# calls in $calls; the header starts missing.
run() {
    rm -f "$work/criterion.h" "$work/calls"
    touch "$work/calls"
    set +e
    err=$(PATH="$work/bin" CRITERION_H="$work/criterion.h" FAKE_UID=$1 FAKE_SUDO=$2 \
          FAKE_INSTALL=$3 "$bash" tests/need_criterion.sh 2>&1)
    rc=$?
    set -e
    calls=$(cat "$work/calls")
}
apt_calls="noninteractive apt-get update -q
noninteractive apt-get install -y -q libcriterion-dev"
one_command="install it with: sudo sh -c 'apt-get update && apt-get install -y libcriterion-dev'"

: >"$work/criterion.h"
PATH="$work/bin" CRITERION_H="$work/criterion.h" FAKE_UID=1000 "$bash" tests/need_criterion.sh ||
    fail "a present header was not enough"

run 0 none works
[ $rc -eq 0 ] && [ -f "$work/criterion.h" ] || fail "as root: exit $rc: $err"
[ "$calls" = "$apt_calls" ] || fail "as root, the calls were: $calls"

run 1000 nopasswd works
[ $rc -eq 0 ] || fail "with passwordless sudo: exit $rc: $err"
[ "$calls" = "sudo -n true
sudo -n env DEBIAN_FRONTEND=noninteractive apt-get update -q
$(sed -n 1p <<<"$apt_calls")
sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -q libcriterion-dev
$(sed -n 2p <<<"$apt_calls")" ] || fail "with passwordless sudo, the calls were: $calls"

run 1000 password works
[ $rc -eq 1 ] && [[ $err == *"$one_command"* ]] || fail "sudo with a password: exit $rc: $err"
[ "$calls" = "sudo -n true" ] || fail "sudo with a password called: $calls"
[ "$(wc -l <<<"$err")" -eq 1 ] || fail "not one line: $err"

rm "$work/bin/sudo"
run 1000 none works
[ $rc -eq 1 ] && [[ $err == *"$one_command"* ]] && [ -z "$calls" ] ||
    fail "no sudo: exit $rc, calls '$calls': $err"

run 0 none broken
[ $rc -eq 1 ] && [[ $err == *"still missing"* ]] || fail "a header still missing: exit $rc: $err"

rm "$work/bin/apt-get"
run 0 none works
[ $rc -eq 1 ] && [[ $err == *"no apt-get"* ]] || fail "no apt-get: exit $rc: $err"
echo "need_criterion_check: ok (present, root, passwordless sudo, password sudo, no sudo," \
     "package without the header, no apt-get)"
