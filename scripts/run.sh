#!/usr/bin/env bash
# `make run`: migrate, collectstatic, then run web (config.serve: nginx on PORT in front of gunicorn for HTTP and daphne
# for the websockets), celery worker and celery beat together. A process that exits or crashes is started again (after 1 s, doubling to
# at most 30 s while it keeps failing quickly), as compose's restart policy does; Ctrl-C (or SIGTERM) stops all three.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.venv/bin
PORT=${PORT:-8787}
export PORT
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-config.settings.dev}
export PYTHONUNBUFFERED=1
STOP_TIMEOUT=${STOP_TIMEOUT:-20}

say() { printf '[run] %s\n' "$*" 2>/dev/null || true; }
die() { printf '[run] ERROR: %s\n' "$*" >&2; exit 1; }

[ -x "$BIN/python" ] || die ".venv is missing; run scripts/ensure-venv.sh (or make run)"
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    die "port $PORT is already in use; stop whatever listens there or run with PORT=<other port>"
fi
mkdir -p .local

say "applying migrations"
"$BIN/python" manage.py migrate --noinput
say "collecting static files"
"$BIN/python" manage.py collectstatic --noinput -v 0

# Each child gets its own process group (job control on), so a terminal Ctrl-C reaches only
# this script, and stopping a child's group also stops its subprocesses (celery pool workers).
set -m

PIDS=()
NAMES=()
STARTS=() # when each was last started (SECONDS)
DELAYS=() # its next restart delay, seconds

command_of() { # name: the command line of that process
    case $1 in
    web) echo "$BIN/python -m config.serve --bind 0.0.0.0 --port $PORT" ;;
    worker) echo "$BIN/celery -A config worker -l info --concurrency 2" ;;
    beat) echo "$BIN/celery -A config beat -l info --schedule .local/celerybeat-schedule" ;;
    esac
}

start() { # index: (re)start the process in that slot
    local i=$1
    # shellcheck disable=SC2046 # the command line is split into words on purpose
    $(command_of "${NAMES[$i]}") &
    PIDS[$i]=$!
    STARTS[$i]=$SECONDS
    say "started ${NAMES[$i]} (pid $!)"
}

alive() { # pid: is anything in the child's process group still running?
    kill -0 -- "-$1" 2>/dev/null || kill -0 "$1" 2>/dev/null
}

STOPPING=0
FORCE=0
stop_all() {
    [ "$STOPPING" -eq 1 ] && return 0
    STOPPING=1
    trap '' PIPE # keep going even if our stdout (a closed pipe/terminal) is gone
    # A second Ctrl-C while stopping kills immediately.
    trap 'FORCE=1' INT TERM
    local pid i deadline
    for pid in "${PIDS[@]}"; do
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    done
    deadline=$((SECONDS + STOP_TIMEOUT))
    for i in "${!PIDS[@]}"; do
        pid=${PIDS[$i]}
        while alive "$pid" && [ "$FORCE" -eq 0 ] && [ "$SECONDS" -lt "$deadline" ]; do
            sleep 0.2
        done
        if alive "$pid"; then
            say "${NAMES[$i]} did not stop in time; killing it"
            kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    done
}

on_signal() { # signal-name exit-code
    trap '' PIPE
    printf '\n' 2>/dev/null || true
    say "received SIG$1, stopping web, worker and beat"
    stop_all
    say "stopped"
    exit "$2"
}
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

NAMES=(web worker beat)
for i in "${!NAMES[@]}"; do
    DELAYS[$i]=1
    start "$i"
done

cat <<EOF

================================================================================
  Practice CRM is running on http://localhost:${PORT}
    API docs:  http://localhost:${PORT}/docs
    Health:    http://localhost:${PORT}/health

  Create a practice (owner login + API key), in another terminal:
    .venv/bin/python manage.py create_practice --name "My Practice" --owner-email you@example.com --owner-password 'choose-a-password' --api-key --json

  Ctrl-C stops web (nginx, gunicorn, daphne), worker and beat.
================================================================================

EOF

# Supervise: whenever a child exits, start it again. A process that ran for a minute or more restarts after 1 s;
# one that keeps dying quickly waits twice as long each time, up to 30 s, so a broken setting does not spin.
while :; do
    if ((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 3))); then
        wait -n 2>/dev/null || true
    else
        sleep 1 # bash < 4.3 (macOS /bin/bash) has no `wait -n`: poll.
    fi
    [ "$STOPPING" -eq 1 ] && break
    for i in "${!PIDS[@]}"; do
        kill -0 "${PIDS[$i]}" 2>/dev/null && continue
        rc=0
        wait "${PIDS[$i]}" 2>/dev/null || rc=$?
        if ((SECONDS - STARTS[i] >= 60)); then DELAYS[$i]=1; fi
        say "${NAMES[$i]} exited (status $rc); restarting it in ${DELAYS[$i]} s"
        sleep "${DELAYS[$i]}"
        [ "$STOPPING" -eq 1 ] && break 2
        start "$i"
        DELAYS[$i]=$((DELAYS[i] * 2 > 30 ? 30 : DELAYS[i] * 2))
    done
done
