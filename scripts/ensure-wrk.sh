#!/usr/bin/env bash
# Make sure wrk (the HTTP load generator `make bench BENCH_ARGS=throughput` drives the server with) is installed:
# Debian's `wrk` package, installed with apt-get when missing and we are root; otherwise says what to do.
set -euo pipefail

say() { printf '[wrk] %s\n' "$*"; }

if command -v wrk >/dev/null 2>&1; then
    say "$(command -v wrk) present"
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "ERROR: wrk is missing. Install Debian's wrk (as root: apt-get install -y wrk)." >&2
    exit 1
fi
say "installing Debian's wrk with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends wrk >/dev/null
command -v wrk >/dev/null 2>&1 || { say "ERROR: apt-get finished but wrk is still missing" >&2; exit 1; }
say "installed $(wrk --version 2>&1 | head -1)"
