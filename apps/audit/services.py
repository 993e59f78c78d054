"""Writes of the audit app. Entries are only ever added (apps.audit.public.record); the one other write is the
retention purge, the only DELETE the table's trigger lets through (it sets audit.purge for its own transaction)."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.audit.models import AuditEntry

# Six years (2,190 days): the longest period for which the records a practice must keep about its handling of
# patient data are commonly demanded back (HIPAA's documentation rule, 45 CFR 164.316(b)(2), and the six-year
# limitation period for claims in England and Wales). Override with the AUDIT_RETENTION_DAYS setting.
DEFAULT_RETENTION_DAYS = 2190
PURGE_BATCH = 5000


def retention_days() -> int:
    return int(getattr(settings, "AUDIT_RETENTION_DAYS", DEFAULT_RETENTION_DAYS))


def audit_purge_expired(*, now: datetime | None = None, batch_size: int = PURGE_BATCH) -> int:
    """Delete entries older than the retention period, `batch_size` at a time, each batch in its own transaction
    with `audit.purge` on (SET LOCAL, switched off again before the batch ends). Returns how many went."""
    cutoff = (now or timezone.now()) - timedelta(days=retention_days())
    total = 0
    while True:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('audit.purge', 'on', true)")
            expired = AuditEntry.objects.filter(created_at__lt=cutoff).order_by("created_at").values("pk")[:batch_size]
            deleted, _ = AuditEntry.objects.filter(pk__in=expired).delete()
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('audit.purge', 'off', true)")
        total += deleted
        if deleted < batch_size:
            return total
