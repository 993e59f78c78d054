#!/usr/bin/env bash
# Make sure an nginx binary is there for the web tier (`python -m config.serve` starts its own nginx, as the current
# user, on a configuration under .local/; it never uses the system's nginx service). Installs Debian's nginx-light
# with apt-get when `nginx` is missing and we are root, without letting the package start the system service;
# otherwise says what to do.
set -euo pipefail

say() { printf '[nginx] %s\n' "$*"; }

if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    say "$(command -v nginx || echo /usr/sbin/nginx) present"
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "ERROR: nginx is missing. Install Debian's nginx-light (as root: apt-get install -y nginx-light)." >&2
    exit 1
fi
say "installing Debian's nginx-light with apt-get (the system service is not started)"
export DEBIAN_FRONTEND=noninteractive
# invoke-rc.d asks policy-rc.d whether a package may start its service: 101 says no.
POLICY=/usr/sbin/policy-rc.d
if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$POLICY"
    chmod 0755 "$POLICY"
    trap 'rm -f "$POLICY"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends nginx-light >/dev/null
[ -x /usr/sbin/nginx ] || { say "ERROR: apt-get finished but /usr/sbin/nginx is still missing" >&2; exit 1; }
say "installed $(/usr/sbin/nginx -v 2>&1)"
