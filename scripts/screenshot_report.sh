#!/usr/bin/env bash
# Renders a --heads report's index.html in headless Chromium and saves a PNG,
# to check the page draws without a network. Not part of `make test`: Chromium
# is optional (apt-get install -y chromium).
#   scripts/screenshot_report.sh REPORT_DIR [OUT.png] [WIDTHxHEIGHT]
# Exits 0 and prints the PNG's path; 1 if the page or Chromium is missing or the
# screenshot is not written; 2 for bad usage.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 ]]; then
    echo "usage: $0 REPORT_DIR [OUT.png] [WIDTHxHEIGHT]" >&2
    exit 2
fi
dir=$1
out=${2:-$dir/screenshot.png}
size=${3:-1400x1800}
if [[ ! "$size" =~ ^[0-9]+x[0-9]+$ ]]; then
    echo "$0: size must look like 1400x1800, got '$size'" >&2
    exit 2
fi
page=$(cd "$dir" 2>/dev/null && pwd)/index.html
if [[ ! -f "$page" ]]; then
    echo "$0: no index.html in '$dir' (run ./infer --heads FILE --report DIR first)" >&2
    exit 1
fi
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$browser" ]]; then
    echo "$0: chromium not found (apt-get install -y chromium)" >&2
    exit 1
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$out"
"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$profile" --screenshot="$out" --window-size="${size/x/,}" \
    "file://$page" >/dev/null 2>&1 || true
if [[ ! -s "$out" ]]; then
    echo "$0: chromium wrote no screenshot to '$out'" >&2
    exit 1
fi
echo "$out"
