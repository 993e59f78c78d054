"""The retention periods the service enforces, read from the settings and constants its purges use.

Only periods a scheduled purge really applies are listed (each names its beat task); records kept for as long as the
practice keeps them (patients, appointments, clinical records, messages) are not "retained for a period" and are left
out rather than given a number nobody enforces.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings

from apps.audit import services
from apps.conversations.public import PARKED_KEPT_DAYS, RECEIPTS_KEPT_HOURS
from apps.deposits.public import RECEIPT_RETENTION_DAYS
from apps.oauth.public import EXCHANGED_CODE_RETENTION, UNUSED_CODE_RETENTION
from apps.webhooks.public import DELIVERY_RETENTION


@dataclass(frozen=True)
class Retention:
    record: str  # a stable key
    description: str
    period: timedelta
    counted_from: str
    enforced_by: str  # the beat task that deletes past the period
    source: str  # the setting or constant the period is read from

    @property
    def iso_period(self) -> str:
        seconds = int(self.period.total_seconds())
        if seconds % 86400 == 0:
            return f"P{seconds // 86400}D"
        return f"PT{seconds // 3600}H" if seconds % 3600 == 0 else f"PT{seconds}S"


def retention_periods() -> list[Retention]:
    return [
        Retention(
            "audit_log",
            "Audit log entries (who changed what, when, from where).",
            timedelta(days=services.retention_days()),
            "the entry's createdAt",
            "apps.audit.tasks.purge_expired (daily)",
            "setting AUDIT_RETENTION_DAYS",
        ),
        Retention(
            "webhook_deliveries",
            "Outbound webhook delivery records (attempts, status codes), once completed or failed.",
            DELIVERY_RETENTION,
            "the delivery's completion",
            "apps.webhooks.tasks.purge_old_deliveries (hourly)",
            "apps.webhooks delivery RETENTION",
        ),
        Retention(
            "notifications",
            "In-app notifications of members.",
            timedelta(days=settings.SVC_NOTIFICATIONS_RETENTION_DAYS),
            "the notification's creation",
            "apps.notifications.tasks.purge_old (hourly)",
            "setting SVC_NOTIFICATIONS_RETENTION_DAYS",
        ),
        Retention(
            "parked_callbacks",
            "Provider callbacks parked for review, once replayed or dismissed.",
            timedelta(days=PARKED_KEPT_DAYS),
            "the decision",
            "apps.conversations.tasks.purge_records (hourly)",
            "apps.conversations PARKED_KEPT_DAYS",
        ),
        Retention(
            "email_event_receipts",
            "Receipts of e-mail provider events (deduplication only).",
            timedelta(hours=RECEIPTS_KEPT_HOURS),
            "first receipt",
            "apps.conversations.tasks.purge_records (hourly)",
            "apps.conversations RECEIPTS_KEPT_HOURS",
        ),
        Retention(
            "payment_callback_receipts",
            "Receipts of payment provider callbacks, once applied.",
            timedelta(days=RECEIPT_RETENTION_DAYS),
            "receipt",
            "apps.deposits.tasks.purge_receipts (hourly)",
            "apps.deposits RECEIPT_RETENTION_DAYS",
        ),
        Retention(
            "oauth_codes_exchanged",
            "OAuth authorization codes kept for replay detection after their exchange.",
            EXCHANGED_CODE_RETENTION,
            "the exchange",
            "apps.oauth.tasks.purge_spent_codes (hourly)",
            "apps.oauth EXCHANGED_CODE_RETENTION",
        ),
        Retention(
            "oauth_codes_unused",
            "OAuth authorization codes never exchanged.",
            UNUSED_CODE_RETENTION,
            "the code's expiry",
            "apps.oauth.tasks.purge_spent_codes (hourly)",
            "apps.oauth UNUSED_CODE_RETENTION",
        ),
    ]
