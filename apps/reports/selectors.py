"""Reading reports: the catalogue, one report's answer (cached per practice, report and normalized parameters), its
CSV, and a member's subscriptions.

Cache: Redis (the default cache), key reports:<practice>:<key>:<sha256 of the normalized parameters>, for
CACHE_SECONDS. `refresh` recomputes and replaces the cached answer. An answer carries generatedAt (when it was
computed) and cached (whether it came from the cache)."""

import csv
import hashlib
import io
import json
from datetime import datetime

from django.core.cache import cache
from django.utils import timezone
from rest_framework import serializers

from apps.core.csv_export import neutralise
from apps.core.naming import to_camel
from apps.reports.catalogue import REPORTS, Context, Report
from apps.reports.errors import ReportNotFound
from apps.reports.models import ReportSubscription
from apps.reports.params import Params

CACHE_SECONDS = 300


def report_catalogue() -> list[dict]:
    return [report.describe() for report in REPORTS.values()]


def report_get(key: str) -> Report:
    report = REPORTS.get(key)
    if report is None:
        raise ReportNotFound()
    return report


def _cache_key(organization, report: Report, params: Params) -> str:
    digest = hashlib.sha256(json.dumps(params.normalized(), sort_keys=True).encode()).hexdigest()
    return f"reports:{organization.pk}:{report.key}:{digest}"


def report_compute(*, organization, report: Report, params: Params, now: datetime | None = None) -> dict:
    """The report's answer computed now (no cache)."""
    now = now or timezone.now()
    figures, rows = report.compute(Context(organization=organization, params=params, now=now))
    return {
        "key": report.key,
        "title": report.title,
        "from": params.range.date_from.isoformat(),
        "to": params.range.date_to.isoformat(),
        "timezone": str(params.range.tz),
        "filters": dict(sorted(params.filters.items())),
        "columns": [to_camel(name) for name in report.columns],
        "figures": figures,
        "rows": rows,
        "generated_at": serializers.DateTimeField().to_representation(now),
    }


def report_answer(*, organization, report: Report, params: Params, refresh: bool = False) -> dict:
    """The cached answer when there is one (and refresh is not asked), else a new one, cached."""
    key = _cache_key(organization, report, params)
    if not refresh:
        found = cache.get(key)
        if found is not None:
            return found | {"cached": True}
    answer = report_compute(organization=organization, report=report, params=params)
    cache.set(key, answer, CACHE_SECONDS)
    return answer | {"cached": False}


def report_csv(answer: dict) -> str:
    """The answer's rows as CSV: the report's columns (camelCase) as the header, every cell spreadsheet-safe."""
    out = io.StringIO()
    writer = csv.writer(out)
    columns = answer["columns"]
    writer.writerow(columns)
    snake = [_snake_of(answer, column) for column in columns]
    for row in answer["rows"]:
        writer.writerow([neutralise(row.get(name)) for name in snake])
    return out.getvalue()


def _snake_of(answer: dict, column: str) -> str:
    report = REPORTS[answer["key"]]
    return next(name for name in report.columns if to_camel(name) == column)


def csv_filename(answer: dict) -> str:
    return f"{answer['key']}_{answer['from']}_{answer['to']}.csv"


def subscriptions_of(*, organization, user) -> list[ReportSubscription]:
    return list(ReportSubscription.objects.for_org(organization).filter(user=user).order_by("created_at", "id"))
