#!/usr/bin/env bash
# Make sure PostgreSQL and Redis (from DATABASE_URL / REDIS_URL) answer.
#
#   scripts/ensure-services.sh          check; start project-local instances under .local/ when
#                                       a local (127.0.0.1/localhost) service is not answering;
#                                       create the database and check pg_trgm is available.
#   scripts/ensure-services.sh stop     stop the project-local instances under .local/ (if any).
#   scripts/ensure-services.sh purge    stop them and delete .local/ (used by `make clean`).
#
# Project-local PostgreSQL: cluster in .local/postgres (trust auth), log .local/postgres.log,
# unix socket in .local/pgsock. Project-local Redis: .local/redis (no persistence).
# When run as root, initdb/pg_ctl run as the `postgres` system user (or `nobody`).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd -P)
LOCAL="$ROOT/.local"

DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/practice_crm}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}

PKG_HINT="install them, e.g. on Debian/Ubuntu: sudo apt-get install postgresql postgresql-contrib redis-server (macOS: brew install postgresql@15 redis)"

say() { printf '[services] %s\n' "$*"; }
die() { printf '[services] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- URL parsing
# parse_url URL DEFAULT_PORT PREFIX -> sets PREFIX_{SCHEME,HOST,PORT,USER,PASSWORD,PATH}
parse_url() {
    local url=$1 default_port=$2 prefix=$3 py="" out
    if [ -x .venv/bin/python ]; then py=.venv/bin/python
    elif command -v python3 >/dev/null 2>&1; then py=python3
    fi
    if [ -n "$py" ]; then
        out=$("$py" - "$url" "$default_port" "$prefix" <<'PY'
import shlex
import sys
from urllib.parse import unquote, urlsplit

url, default_port, prefix = sys.argv[1:]
u = urlsplit(url)
netloc = u.netloc.rpartition("@")[2]
if netloc.startswith("["):  # [ipv6]:port
    host = netloc[1 : netloc.find("]")]
else:
    host = netloc.rsplit(":", 1)[0] if ":" in netloc else netloc
try:
    port = u.port
except ValueError:
    sys.exit(f"invalid port in {url!r}")
fields = {
    "SCHEME": u.scheme,
    "HOST": unquote(host) or "127.0.0.1",  # %2Fvar%2Frun%2Fpostgresql -> socket dir
    "PORT": str(port or default_port),
    "USER": unquote(u.username or ""),
    "PASSWORD": unquote(u.password or ""),
    "PATH": unquote(u.path.lstrip("/")),
}
for key, value in fields.items():
    print(f"{prefix}_{key}={shlex.quote(value)}")
PY
        ) || die "could not parse URL: $url"
        eval "$out"
    else
        # Pure-bash fallback: scheme://[user[:password]@]host[:port][/path][?query]
        local re='^([A-Za-z0-9+.-]+)://(([^:@/]*)(:([^@/]*))?@)?(\[[^]/]+\]|[^:/?#]*)(:([0-9]+))?(/([^?#]*))?'
        [[ $url =~ $re ]] || die "could not parse URL: $url"
        local host=${BASH_REMATCH[6]}
        host=${host#[}; host=${host%]}
        printf -v "${prefix}_SCHEME" '%s' "${BASH_REMATCH[1]}"
        printf -v "${prefix}_USER" '%s' "${BASH_REMATCH[3]}"
        printf -v "${prefix}_PASSWORD" '%s' "${BASH_REMATCH[5]}"
        printf -v "${prefix}_HOST" '%s' "${host:-127.0.0.1}"
        printf -v "${prefix}_PORT" '%s' "${BASH_REMATCH[8]:-$default_port}"
        printf -v "${prefix}_PATH" '%s' "${BASH_REMATCH[10]}"
    fi
}

is_local_host() {
    case "$1" in 127.0.0.1 | localhost | ::1) return 0 ;; *) return 1 ;; esac
}

# ---------------------------------------------------------------- run-as helpers
IS_ROOT=0
[ "$(id -u)" -eq 0 ] && IS_ROOT=1

pick_service_user() {
    if id -u postgres >/dev/null 2>&1; then echo postgres; else echo nobody; fi
}

# as_user USER CMD... : run CMD as USER (only used when we are root), from / so the
# target user does not need access to our working directory.
as_user() {
    local user=$1
    shift
    if command -v runuser >/dev/null 2>&1; then
        (cd / && runuser -u "$user" -- "$@")
    else
        local cmd
        printf -v cmd '%q ' "$@"
        (cd / && su "$user" -s /bin/sh -c "$cmd")
    fi
}

# pg_run CMD... : run a PostgreSQL server binary as the cluster owner.
pg_run() {
    if [ "$IS_ROOT" -eq 1 ]; then as_user "$PG_OS_USER" "$@"; else "$@"; fi
}

# ---------------------------------------------------------------- binaries
# find_pg_bindir [MAJOR] : directory holding initdb + pg_ctl + postgres (highest version).
find_pg_bindir() {
    local want=${1:-} d c
    local candidates=()
    c=$(command -v initdb 2>/dev/null || true)
    [ -n "$c" ] && candidates+=("$(dirname "$c")")
    for d in $(ls -d /usr/lib/postgresql/*/bin /usr/local/opt/postgresql*/bin /opt/homebrew/opt/postgresql*/bin \
        /usr/local/pgsql/bin /usr/pgsql-*/bin 2>/dev/null | sort -V -r); do
        candidates+=("$d")
    done
    for d in "${candidates[@]}"; do
        [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ] || continue
        if [ -n "$want" ]; then
            "$d/postgres" --version 2>/dev/null | grep -Eq "[^0-9]${want}(\.|[^0-9]|$)" || continue
        fi
        echo "$d"
        return 0
    done
    return 1
}

# find_pg_tool NAME : client tool (pg_isready, psql, createdb) on PATH or under /usr/lib/postgresql.
find_pg_tool() {
    local c
    c=$(command -v "$1" 2>/dev/null || true)
    if [ -z "$c" ]; then
        c=$(ls -d /usr/lib/postgresql/*/bin/"$1" /usr/local/opt/postgresql*/bin/"$1" \
            /opt/homebrew/opt/postgresql*/bin/"$1" 2>/dev/null | sort -V -r | head -n1 || true)
    fi
    [ -n "$c" ] || return 1
    echo "$c"
}

# ---------------------------------------------------------------- project-local PostgreSQL
PGDATA_LINK="$LOCAL/postgres"

pg_local_datadir() {
    # .local/postgres may be a symlink to a directory the postgres user can reach (root case).
    if [ -L "$PGDATA_LINK" ]; then readlink -f "$PGDATA_LINK"; else echo "$PGDATA_LINK"; fi
}

pg_local_bindir() {
    local datadir=$1 major=""
    [ -f "$datadir/PG_VERSION" ] && major=$(cat "$datadir/PG_VERSION")
    find_pg_bindir "$major"
}

pg_local_running() { # datadir bindir
    pg_run "$2/pg_ctl" -D "$1" status >/dev/null 2>&1
}

pg_local_stop() {
    local datadir bindir
    datadir=$(pg_local_datadir)
    [ -f "$datadir/PG_VERSION" ] || { say "no project-local PostgreSQL under .local"; return 0; }
    if [ "$IS_ROOT" -eq 1 ]; then PG_OS_USER=$(stat -c %U "$datadir" 2>/dev/null || pick_service_user); fi
    if bindir=$(pg_local_bindir "$datadir"); then
        if pg_local_running "$datadir" "$bindir"; then
            say "stopping project-local PostgreSQL ($datadir)"
            pg_run "$bindir/pg_ctl" -D "$datadir" -m fast -w -t 60 stop >/dev/null
        else
            say "project-local PostgreSQL is not running"
        fi
    elif [ -f "$datadir/postmaster.pid" ]; then
        local pid
        pid=$(head -n1 "$datadir/postmaster.pid")
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            say "stopping project-local PostgreSQL (pid $pid)"
            kill -INT "$pid"
            for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        fi
    fi
}

pg_local_start() { # host port user
    local host=$1 port=$2 dbuser=${3:-postgres} bindir datadir pghome sockdir logfile listen locale
    local existing=""
    datadir=$(pg_local_datadir)
    [ -f "$datadir/PG_VERSION" ] && existing=$(cat "$datadir/PG_VERSION")
    bindir=$(find_pg_bindir "$existing") || {
        if [ -n "$existing" ]; then
            die "PostgreSQL $existing server binaries (initdb, pg_ctl, postgres) not found for the cluster in .local/postgres; $PKG_HINT, or remove .local/postgres (make clean)"
        fi
        die "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found; $PKG_HINT"
    }

    mkdir -p "$LOCAL"
    if [ "$IS_ROOT" -eq 1 ]; then
        PG_OS_USER=$(pick_service_user)
        if [ -d "$datadir" ]; then PG_OS_USER=$(stat -c %U "$datadir"); fi
    fi

    # Where the cluster, its log and its socket live. Normally .local itself; when we are root
    # and the service user cannot reach .local (e.g. the checkout is under /root), a private
    # directory under /tmp, symlinked from .local/postgres and .local/postgres.log.
    pghome=$LOCAL
    if [ "$IS_ROOT" -eq 1 ] && [ ! -L "$PGDATA_LINK" ] && ! as_user "$PG_OS_USER" test -x "$LOCAL"; then
        pghome="${TMPDIR:-/tmp}/practice-crm-pg-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)"
        say "$PG_OS_USER cannot access $LOCAL; keeping the cluster in $pghome (linked from .local/postgres)"
        mkdir -p "$pghome"
        chmod 755 "$pghome"
        ln -sfn "$pghome/postgres" "$PGDATA_LINK"
        : >"$pghome/postgres.log"
        ln -sfn "$pghome/postgres.log" "$LOCAL/postgres.log"
    elif [ -L "$PGDATA_LINK" ]; then
        pghome=$(dirname "$datadir")
    fi
    datadir="$pghome/postgres"
    logfile="$pghome/postgres.log"
    sockdir="$pghome/pgsock"
    # Unix socket paths are limited to ~107 bytes.
    if [ $((${#sockdir} + 20)) -gt 100 ]; then
        sockdir="${TMPDIR:-/tmp}/pcrm-pgsock-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)"
    fi
    mkdir -p "$sockdir"
    touch "$logfile"
    if [ "$IS_ROOT" -eq 1 ]; then
        chown "$PG_OS_USER" "$sockdir" "$logfile"
    fi

    if [ ! -f "$datadir/PG_VERSION" ]; then
        mkdir -p "$datadir"
        chmod 700 "$datadir"
        if [ "$IS_ROOT" -eq 1 ]; then chown "$PG_OS_USER" "$datadir"; fi
        locale=C
        if locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$'; then locale=C.UTF-8; fi
        say "initializing project-local PostgreSQL cluster in .local/postgres ($("$bindir/postgres" --version))"
        pg_run "$bindir/initdb" -D "$datadir" --auth=trust -U "$dbuser" -E UTF8 --locale="$locale" \
            >"$LOCAL/initdb.log" 2>&1 || {
            cat "$LOCAL/initdb.log" >&2
            die "initdb failed (see above)"
        }
    fi

    if pg_local_running "$datadir" "$bindir"; then
        # Running, but not answering on the requested port: restart it there.
        say "project-local PostgreSQL is running on another port; restarting it on $port"
        pg_run "$bindir/pg_ctl" -D "$datadir" -m fast -w -t 60 stop >/dev/null
    fi

    case "$host" in
    localhost) listen=localhost ;;
    ::1) listen='::1' ;;
    *) listen=127.0.0.1 ;;
    esac
    say "starting project-local PostgreSQL on $host:$port (log: .local/postgres.log)"
    pg_run "$bindir/pg_ctl" -D "$datadir" -l "$logfile" -w -t 60 \
        -o "-p $port -k \"$sockdir\" -c listen_addresses='$listen'" start >/dev/null || {
        tail -n 20 "$logfile" >&2 || true
        die "could not start PostgreSQL (see .local/postgres.log)"
    }
}

# ---------------------------------------------------------------- project-local Redis
REDIS_DIR="$LOCAL/redis"
REDIS_PIDFILE="$REDIS_DIR/redis.pid"

redis_local_pid() {
    local pid
    [ -f "$REDIS_PIDFILE" ] || return 1
    pid=$(tr -dc '0-9' <"$REDIS_PIDFILE")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    # Make sure the pid is still a redis-server (not a recycled pid).
    if [ -r "/proc/$pid/comm" ]; then
        grep -q '^redis-server' "/proc/$pid/comm" || return 1
    else
        ps -p "$pid" -o comm= 2>/dev/null | grep -q 'redis-server' || return 1
    fi
    echo "$pid"
}

redis_local_stop() {
    local pid
    if pid=$(redis_local_pid); then
        say "stopping project-local Redis (pid $pid)"
        kill -TERM "$pid"
        for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
        rm -f "$REDIS_PIDFILE"
    else
        [ -f "$REDIS_PIDFILE" ] && rm -f "$REDIS_PIDFILE"
        say "no project-local Redis running"
    fi
}

redis_local_start() { # host port password
    local host=$1 port=$2 password=$3 bin bind
    bin=$(command -v redis-server 2>/dev/null || true)
    for c in /usr/bin/redis-server /usr/sbin/redis-server /usr/local/bin/redis-server /opt/homebrew/bin/redis-server; do
        [ -n "$bin" ] && break
        [ -x "$c" ] && bin=$c
    done
    [ -n "$bin" ] || die "redis-server not found; $PKG_HINT"
    # A previous project-local instance on another port would lose its pidfile: stop it first.
    redis_local_pid >/dev/null && redis_local_stop
    mkdir -p "$REDIS_DIR"
    case "$host" in ::1) bind='::1' ;; *) bind=127.0.0.1 ;; esac
    local args=(--daemonize yes --port "$port" --bind "$bind" --save '' --appendonly no
        --dir "$REDIS_DIR" --pidfile "$REDIS_PIDFILE" --logfile "$REDIS_DIR/redis.log")
    [ -n "$password" ] && args+=(--requirepass "$password")
    say "starting project-local Redis on $host:$port (log: .local/redis/redis.log)"
    "$bin" "${args[@]}" || die "could not start redis-server (see .local/redis/redis.log)"
}

# ---------------------------------------------------------------- checks
pg_ready() {
    "$PG_ISREADY" -q -h "$DB_HOST" -p "$DB_PORT" -t 3 >/dev/null 2>&1
}

redis_ping() {
    local cli
    cli=$(command -v redis-cli 2>/dev/null || true)
    if [ -n "$cli" ]; then
        local args=(-h "$R_HOST" -p "$R_PORT")
        [ "$R_SCHEME" = rediss ] && args+=(--tls)
        [ -n "$R_PASSWORD" ] && args+=(--no-auth-warning -a "$R_PASSWORD")
        [ -n "$R_USER" ] && [ -n "$R_PASSWORD" ] && args+=(--user "$R_USER")
        local out
        if command -v timeout >/dev/null 2>&1; then
            out=$(timeout 5 "$cli" "${args[@]}" ping 2>/dev/null || true)
        else
            out=$("$cli" "${args[@]}" ping 2>/dev/null || true)
        fi
        [[ $out == *PONG* ]]
    else
        # No redis-cli: speak RESP over bash's /dev/tcp.
        (
            exec 3<>"/dev/tcp/$R_HOST/$R_PORT" || exit 1
            if [ -n "$R_PASSWORD" ]; then
                if [ -n "$R_USER" ]; then printf 'AUTH %s %s\r\n' "$R_USER" "$R_PASSWORD" >&3
                else printf 'AUTH %s\r\n' "$R_PASSWORD" >&3; fi
                read -r -t 3 _ <&3 || exit 1
            fi
            printf 'PING\r\n' >&3
            read -r -t 3 line <&3 || exit 1
            [[ $line == *PONG* ]]
        ) 2>/dev/null
    fi
}

wait_for() { # seconds description function
    local secs=$1 what=$2 fn=$3 i
    for ((i = 0; i < secs * 4; i++)); do
        "$fn" && return 0
        sleep 0.25
    done
    die "$what did not become ready within ${secs}s"
}

psql_q() { # SQL -> first column of the result
    PGCONNECT_TIMEOUT=5 "$PSQL" -X -q -h "$DB_HOST" -p "$DB_PORT" -U "$DB_USER" -d postgres -tAc "$1"
}

# ================================================================ main
case "${1:-}" in
"") ;;
stop)
    pg_local_stop
    redis_local_stop
    exit 0
    ;;
purge)
    pg_local_stop
    redis_local_stop
    # A cluster kept outside .local (root fallback) lives in a practice-crm-pg-* dir.
    if [ -L "$PGDATA_LINK" ]; then
        target=$(dirname "$(readlink -f "$PGDATA_LINK")")
        case "$(basename "$target")" in practice-crm-pg-*) rm -rf "$target" ;; esac
    fi
    rm -rf "$LOCAL"
    say "removed .local"
    exit 0
    ;;
*) die "usage: $0 [stop|purge]" ;;
esac

parse_url "$DATABASE_URL" 5432 DB
parse_url "$REDIS_URL" 6379 R
DB_USER=${DB_USER:-postgres}
DB_NAME=${DB_PATH:-}
[ -n "$DB_NAME" ] || die "DATABASE_URL has no database name: $DATABASE_URL"
case "$DB_SCHEME" in postgres | postgresql | pgsql | postgis) ;; *) die "DATABASE_URL is not a PostgreSQL URL: $DATABASE_URL" ;; esac
case "$R_SCHEME" in redis | rediss) ;; *) die "REDIS_URL is not a redis:// URL: $REDIS_URL" ;; esac
if [ -n "$DB_PASSWORD" ]; then export PGPASSWORD="$DB_PASSWORD"; fi

PG_ISREADY=$(find_pg_tool pg_isready) || die "pg_isready not found; $PKG_HINT"
PSQL=$(find_pg_tool psql) || die "psql not found; $PKG_HINT"
CREATEDB=$(find_pg_tool createdb) || die "createdb not found; $PKG_HINT"

# --- PostgreSQL
if pg_ready; then
    say "PostgreSQL answers on $DB_HOST:$DB_PORT"
else
    is_local_host "$DB_HOST" ||
        die "PostgreSQL at $DB_HOST:$DB_PORT (DATABASE_URL) does not answer, and it is not local, so it is not started here"
    say "PostgreSQL does not answer on $DB_HOST:$DB_PORT"
    pg_local_start "$DB_HOST" "$DB_PORT" "$DB_USER"
    wait_for 30 "PostgreSQL on $DB_HOST:$DB_PORT" pg_ready
    say "PostgreSQL answers on $DB_HOST:$DB_PORT"
fi

# --- Redis
if redis_ping; then
    say "Redis answers on $R_HOST:$R_PORT"
else
    is_local_host "$R_HOST" ||
        die "Redis at $R_HOST:$R_PORT (REDIS_URL) does not answer, and it is not local, so it is not started here"
    say "Redis does not answer on $R_HOST:$R_PORT"
    redis_local_start "$R_HOST" "$R_PORT" "$R_PASSWORD"
    wait_for 15 "Redis on $R_HOST:$R_PORT" redis_ping
    say "Redis answers on $R_HOST:$R_PORT"
fi

# --- database + pg_trgm
DB_NAME_SQL=${DB_NAME//\'/\'\'}
exists=$(psql_q "SELECT 1 FROM pg_database WHERE datname='$DB_NAME_SQL'") ||
    die "cannot connect to PostgreSQL at $DB_HOST:$DB_PORT as user '$DB_USER' (check DATABASE_URL)"
if [[ $exists == *1* ]]; then
    say "database '$DB_NAME' exists"
else
    PGCONNECT_TIMEOUT=5 "$CREATEDB" -h "$DB_HOST" -p "$DB_PORT" -U "$DB_USER" -- "$DB_NAME" ||
        die "could not create database '$DB_NAME' (user '$DB_USER' needs CREATEDB)"
    say "database '$DB_NAME' created"
fi

trgm=$(psql_q "SELECT 1 FROM pg_available_extensions WHERE name='pg_trgm'") || trgm=""
if [[ $trgm != *1* ]]; then
    die "the pg_trgm extension is not available in PostgreSQL at $DB_HOST:$DB_PORT; install postgresql-contrib (Debian/Ubuntu: sudo apt-get install postgresql-contrib)"
fi
say "pg_trgm available; services ready"
