"""Writes of the reports area: a member's report subscriptions, and their delivery by e-mail (the beat sweep)."""

import logging
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Membership
from apps.accounts.roles import role_has_permission
from apps.core.errors import ValidationFailed
from apps.reports import mail, schedule
from apps.reports.errors import SubscriptionLimitReached
from apps.reports.models import Frequency, ReportSubscription
from apps.reports.params import Params, Range, parse_filters, practice_zone, raise_problems
from apps.reports.selectors import report_compute, report_get

logger = logging.getLogger("apps.reports")

MAX_SUBSCRIPTIONS_PER_MEMBER = 20
SWEEP_BATCH = 200  # subscriptions one sweep run sends at most; the next run takes the rest
MEMBER_LEFT = "MEMBER_LEFT"
NO_ACCESS = "NO_ACCESS"
SCHEDULE_FIELDS = ("frequency", "send_time", "weekday", "month_day")


def _checked(*, organization, values: dict) -> dict:
    """The subscription's fields as they will be: the report exists, its filters are its own and this practice's,
    and the schedule names the day its frequency needs (weekday for weekly, monthDay for monthly)."""
    report = report_get(values["report_key"])
    problems: dict = {}
    filters = values.get("filters") or {}
    if not isinstance(filters, dict):
        raise ValidationFailed.for_field("filters", "must be an object")
    allowed = {spec.name for spec in report.filters}
    for name in sorted(set(filters) - allowed):
        problems[f"filters.{name}"] = ["is not a filter of this report"]
    nested: dict = {}
    values["filters"] = parse_filters(organization=organization, filters=report.filters, data=filters, problems=nested)
    problems.update({f"filters.{name}": found for name, found in nested.items()})
    if values["frequency"] == Frequency.WEEKLY and values.get("weekday") is None:
        problems["weekday"] = ["is required for a weekly subscription"]
    if values["frequency"] == Frequency.MONTHLY and values.get("month_day") is None:
        problems["monthDay"] = ["is required for a monthly subscription"]
    raise_problems(problems)
    if values["frequency"] != Frequency.WEEKLY:
        values["weekday"] = None
    if values["frequency"] != Frequency.MONTHLY:
        values["month_day"] = None
    return values


def _schedule_next(subscription: ReportSubscription, organization, now) -> None:
    subscription.next_due_at = schedule.next_due(
        frequency=subscription.frequency,
        send_time=subscription.send_time,
        weekday=subscription.weekday,
        month_day=subscription.month_day,
        tz=practice_zone(organization),
        after=now,
    )


@transaction.atomic
def subscription_create(*, organization, user, data: dict) -> ReportSubscription:
    """A new subscription of the member's own; at most MAX_SUBSCRIPTIONS_PER_MEMBER each (409)."""
    # The member's row lock keeps two concurrent creations from both passing the count.
    Membership.objects.for_org(organization).select_for_update().filter(user=user).first()
    if ReportSubscription.objects.for_org(organization).filter(user=user).count() >= MAX_SUBSCRIPTIONS_PER_MEMBER:
        raise SubscriptionLimitReached(details={"max": MAX_SUBSCRIPTIONS_PER_MEMBER})
    values = _checked(organization=organization, values={"enabled": True, **data})
    subscription = ReportSubscription(organization=organization, user=user, **values)
    _schedule_next(subscription, organization, timezone.now())
    subscription.save()
    return subscription


@transaction.atomic
def subscription_update(*, organization, subscription: ReportSubscription, data: dict) -> ReportSubscription:
    """Any of the fields; a changed schedule, or a subscription enabled again, is due next from now."""
    subscription = ReportSubscription.objects.for_org(organization).select_for_update().get(id=subscription.id)
    current = {name: getattr(subscription, name) for name in ("report_key", "filters", *SCHEDULE_FIELDS)}
    if "report_key" in data and data["report_key"] != subscription.report_key and "filters" not in data:
        current["filters"] = {}  # another report's filters do not carry over
    values = _checked(organization=organization, values=current | data)
    rescheduled = any(values[name] != getattr(subscription, name) for name in SCHEDULE_FIELDS)
    enabling = values.get("enabled") is True and not subscription.enabled
    for name, value in values.items():
        setattr(subscription, name, value)
    if enabling:
        subscription.disabled_reason = ""
    if rescheduled or enabling:
        _schedule_next(subscription, organization, timezone.now())
    subscription.save()
    return subscription


@transaction.atomic
def subscription_delete(*, organization, subscription: ReportSubscription) -> None:
    ReportSubscription.objects.for_org(organization).filter(id=subscription.id).delete()


# --- delivery ---------------------------------------------------------------------------------------------------


@dataclass
class SweepReport:
    sent: int = 0
    skipped: int = 0  # the period was already sent (a retried run)
    disabled: int = 0  # the member left or lost report:read
    failed: int = 0  # the e-mail could not be sent: due again at the next run


def subscriptions_send_due(*, now=None, batch: int = SWEEP_BATCH) -> SweepReport:
    """Every five minutes (beat): each enabled subscription whose moment has come, taken one at a time under a row
    lock (FOR UPDATE SKIP LOCKED, so concurrent runs share the work), gets its report for the period just ended,
    and moves to its next moment in the same transaction. A failed send leaves it due."""
    now = now or timezone.now()
    report = SweepReport()
    failed: list = []
    for _ in range(batch):
        with transaction.atomic():
            subscription = (
                ReportSubscription.objects.unscoped()
                .select_for_update(skip_locked=True, of=("self",))
                .select_related("organization", "user")
                .filter(enabled=True, next_due_at__lte=now)
                .exclude(id__in=failed)
                .order_by("next_due_at", "id")
                .first()
            )
            if subscription is None:
                break
            try:
                with transaction.atomic():
                    outcome = _deliver(subscription, now)
            except Exception:
                logger.exception("report subscription %s: sending failed", subscription.id)
                failed.append(subscription.id)
                outcome = "failed"
        setattr(report, outcome, getattr(report, outcome) + 1)
    return report


def _deliver(subscription: ReportSubscription, now) -> str:
    organization = subscription.organization
    membership = Membership.objects.for_org(organization).filter(user=subscription.user).first()
    reason = None
    if membership is None or not subscription.user.is_active:
        reason = MEMBER_LEFT
    elif not role_has_permission(membership.role, "report:read"):
        reason = NO_ACCESS
    if reason:
        subscription.enabled, subscription.disabled_reason = False, reason
        subscription.save(update_fields=["enabled", "disabled_reason", "updated_at"])
        return "disabled"
    tz = practice_zone(organization)
    date_from, date_to = schedule.period_for(
        frequency=subscription.frequency, sent_on=subscription.next_due_at.astimezone(tz).date()
    )
    outcome = "skipped"
    if subscription.last_period_end != date_to:
        report = report_get(subscription.report_key)
        params = Params(range=Range(date_from, date_to, tz), filters=dict(subscription.filters))
        answer = report_compute(organization=organization, report=report, params=params, now=now)
        mail.send_report(to=subscription.user.email, practice=organization.name, answer=answer)
        subscription.last_period_end, subscription.last_sent_at = date_to, now
        outcome = "sent"
    _schedule_next(subscription, organization, max(now, subscription.next_due_at))
    subscription.save(update_fields=["last_period_end", "last_sent_at", "next_due_at", "updated_at"])
    return outcome
