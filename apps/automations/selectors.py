"""Reads of automations: rules, runs, and the dry run.

The dry run evaluates a rule (saved or not) over the practice's events of the last 7 days (newest first, at most
DRY_RUN_SCAN events of the rule's type; Event rows by practice and time, indexed) or, for a schedule, over the ticks
of those 7 days. It returns the first DRY_RUN_MATCHES matches with the conditions' verdicts and the actions' plans
(resolved targets), and the totals. It writes nothing: patient fields are read as they are now, and a rule's own
chain, limits and dedupe are not simulated.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from apps.automations import actions as steps
from apps.automations.models import AutomationRule, AutomationRun, TriggerType
from apps.automations.schedules import next_tick
from apps.automations.subjects import evaluate, event_subjects, tick_subject
from apps.automations.validation import Rule
from apps.events.models import Event
from apps.events.services import envelope

DRY_RUN_DAYS = 7
DRY_RUN_SCAN = 5000
DRY_RUN_MATCHES = 500


def rules_of(*, organization) -> QuerySet:
    return AutomationRule.objects.for_org(organization).order_by("-created_at", "-id")


@dataclass(frozen=True)
class RunQuery:
    status: str | None = None
    rule_id: object = None
    created_from: datetime | None = None
    created_to: datetime | None = None


def runs_of(*, organization, query: RunQuery) -> QuerySet:
    runs = AutomationRun.objects.for_org(organization).order_by("-created_at", "-id")
    if query.status:
        runs = runs.filter(status=query.status)
    if query.rule_id:
        runs = runs.filter(rule_id=query.rule_id)
    if query.created_from:
        runs = runs.filter(created_at__gte=query.created_from)
    if query.created_to:
        runs = runs.filter(created_at__lt=query.created_to)
    return runs


def _plans(organization, rule: Rule, subject) -> list[dict]:
    planned = []
    for index, action in enumerate(rule.actions):
        step = steps.plan(organization, action, subject)
        planned.append({"index": index, "type": action["type"], "target": step.target, "skip": step.skip})
    return planned


def _event_summary(event: Event) -> dict:
    whole = envelope(event)
    return {key: whole[key] for key in ("id", "type", "createdAt", "subject", "actor")}


def dry_run(*, organization, rule: Rule, now: datetime | None = None) -> dict:
    now = now or timezone.now()
    since = now - timedelta(days=DRY_RUN_DAYS)
    matches: list[dict] = []
    matched = evaluated = 0
    truncated = False
    if rule.trigger_type == TriggerType.EVENT:
        events = list(
            Event.objects.for_org(organization)
            .filter(type=rule.event_type, created_at__gte=since, created_at__lte=now)
            .order_by("-created_at", "-id")[: DRY_RUN_SCAN + 1]
        )
        truncated = len(events) > DRY_RUN_SCAN
        events = events[:DRY_RUN_SCAN]
        subjects = event_subjects(organization, events)
        for event in events:
            evaluated += 1
            passed, verdicts = evaluate(rule.conditions, subjects[event.id])
            if not passed:
                continue
            matched += 1
            if len(matches) < DRY_RUN_MATCHES:
                plans = _plans(organization, rule, subjects[event.id])
                matches.append(
                    {"event": _event_summary(event), "tick_at": None, "conditions": verdicts, "actions": plans}
                )
    else:
        tick = next_tick(rule.schedule, organization, since)
        while tick <= now:
            evaluated += 1
            subject = tick_subject(organization, tick)
            passed, verdicts = evaluate(rule.conditions, subject)
            if passed:
                matched += 1
                plans = _plans(organization, rule, subject)
                matches.append({"event": None, "tick_at": tick, "conditions": verdicts, "actions": plans})
            tick = next_tick(rule.schedule, organization, tick)
    return {
        "from": since,
        "to": now,
        "evaluated": evaluated,
        "scan_truncated": truncated,
        "matched_total": matched,
        "matches": matches,
    }
