#!/bin/sh
# Container entrypoint. With MIGRATE_ON_START=1 (the web service) apply migrations first,
# then run the given command (daphne, celery worker/beat/flower, manage.py ...).
set -eu

if [ "${MIGRATE_ON_START:-0}" = "1" ]; then
    echo "[entrypoint] applying migrations"
    python manage.py migrate --noinput
fi

exec "$@"
