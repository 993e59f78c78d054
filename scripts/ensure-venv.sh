#!/usr/bin/env bash
# Create .venv (Python 3.11+) if missing and install requirements/dev.txt when the
# requirements changed since the last successful install. Idempotent; fast no-op otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv
REQ=requirements/dev.txt
REQ_FILES=(requirements/*.txt)

say() { printf '[venv] %s\n' "$*"; }
die() { printf '[venv] ERROR: %s\n' "$*" >&2; exit 1; }

[ -f "$REQ" ] || die "$REQ not found"

# Python >= 3.11?
py_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' >/dev/null 2>&1; }

pick_python() {
    local c
    for c in "${PYTHON:-}" python3.11 python3; do
        [ -n "$c" ] || continue
        if command -v "$c" >/dev/null 2>&1 && py_ok "$c"; then
            command -v "$c"
            return 0
        fi
    done
    return 1
}

# A venv whose interpreter vanished or is too old (e.g. after a system upgrade) is rebuilt.
if [ -d "$VENV" ] && ! py_ok "$VENV/bin/python"; then
    say "$VENV is broken or uses Python < 3.11; recreating it"
    rm -rf "$VENV"
fi

if [ ! -x "$VENV/bin/python" ]; then
    PY=$(pick_python) || die "Python 3.11+ not found (install python3.11, e.g. apt-get install python3.11 python3.11-venv)"
    say "creating $VENV with $PY ($("$PY" -V 2>&1))"
    "$PY" -m venv "$VENV" || die "could not create $VENV (on Debian/Ubuntu: apt-get install python3.11-venv)"
fi

# Hash of all requirements files (dev.txt includes base.txt).
if command -v sha256sum >/dev/null 2>&1; then
    HASH=$(cat "${REQ_FILES[@]}" | sha256sum | cut -c1-16)
else
    HASH=$(cat "${REQ_FILES[@]}" | shasum -a 256 | cut -c1-16)
fi
STAMP="$VENV/.installed-$HASH"

need_install=0
if [ ! -f "$STAMP" ]; then
    need_install=1
else
    for f in "${REQ_FILES[@]}"; do
        if [ "$f" -nt "$STAMP" ]; then need_install=1; fi
    done
fi

if [ "$need_install" -eq 0 ]; then
    say "up to date ($VENV, requirements $HASH)"
    exit 0
fi

say "installing $REQ into $VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQ"
rm -f "$VENV"/.installed-*
touch "$STAMP"
say "installed (requirements $HASH)"
