#!/usr/bin/env bash
# Make sure Debian's Chromium is at /usr/bin/chromium for the browser tests (tests/browser, driven by the Python
# `playwright` package with executable_path=/usr/bin/chromium; never `playwright install`, which downloads a build
# of its own). Installs the `chromium` package with apt-get when missing and we are root; otherwise says what to do.
set -euo pipefail

BROWSER=${SVC_TEST_CHROMIUM:-/usr/bin/chromium}
say() { printf '[browser] %s\n' "$*"; }

if [ -x "$BROWSER" ]; then
    say "$BROWSER present"
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "ERROR: $BROWSER is missing. Install Debian's chromium (as root: apt-get install -y chromium), or point" >&2
    say "SVC_TEST_CHROMIUM at a Chromium binary." >&2
    exit 1
fi
say "installing Debian's chromium with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
[ -x "$BROWSER" ] || { say "ERROR: apt-get finished but $BROWSER is still missing" >&2; exit 1; }
say "installed $("$BROWSER" --version 2>/dev/null | head -1)"
