"""Liveness and readiness. Neither reveals practice data."""

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpResponse
from django_redis import get_redis_connection
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.core.views import BaseApiView


class ReadinessOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable"])
    checks = serializers.DictField(
        child=serializers.ChoiceField(choices=["ok", "failing", "pending"]),
        help_text="database, redis, migrations",
    )


def _database() -> str:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _redis() -> str:
    get_redis_connection("default").ping()
    return "ok"


def _migrations() -> str:
    connection = connections[DEFAULT_DB_ALIAS]
    executor = MigrationExecutor(connection)
    return "pending" if executor.migration_plan(executor.loader.graph.leaf_nodes()) else "ok"


class RuntimeHealthView(BaseApiView):
    public = True

    @extend_schema(
        tags=["health"],
        responses={204: None},
        summary="Liveness: the process answers",
        description="Public. 204 with no body while the process answers; no dependency is checked.",
    )
    def get(self, request):
        return HttpResponse(status=204)


class ReadinessView(BaseApiView):
    public = True

    @extend_schema(
        tags=["health"],
        responses={200: ReadinessOutput, 503: ReadinessOutput},
        summary="Readiness: database, Redis and migrations",
        description="Public; no practice data. 200 when the database, Redis and migrations are ready, 503 when not.",
    )
    def get(self, request):
        checks = {}
        for name, probe in (("database", _database), ("redis", _redis), ("migrations", _migrations)):
            try:
                checks[name] = probe()
            except Exception:  # any failure of a dependency means not ready; the detail stays in our logs
                checks[name] = "failing"
        if checks["database"] == "failing":
            checks["migrations"] = "failing"
        ready = all(value == "ok" for value in checks.values())
        return Response({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)
