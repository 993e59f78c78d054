"""Running rules: the commit listener, the evaluation of committed events, schedule ticks, and the sweeps.

1. After each committed transaction that recorded events, `queue_committed_events` (registered in
   AutomationsConfig.ready()) keeps the events some enabled rule of their practice listens to (one query) and queues
   `apps.automations.tasks.evaluate_events` with their ids and the current chain.
2. The chain: while a run's actions execute, a context variable holds the rule ids of the chain so far (this rule
   last). The events its actions commit reach the listener inside that context (the action's transaction is the
   outermost one in a worker), so their evaluation carries the chain; the listener also records it per event
   (ChainedEvent) for the recovery sweep. A rule already in the chain is recorded `refused_loop` and not run, and so
   is any run once the chain holds MAX_CHAIN_DEPTH rules.
3. Each (rule, event) pair is evaluated once: the run row is unique on (practice, rule, event), written before any
   action runs, so a redelivered task or the sweep finds it and does nothing. A run whose conditions hold takes a
   token from the practice's hourly bucket (SVC_AUTOMATIONS_RUNS_PER_HOUR, default 1,000); without one it is
   recorded `limited`. A Redis outage fails open (logged): loops are still refused by the chain.
4. Actions run in order, each in its own transaction through the owning area's services. A failing action marks the
   run `failed` with its reason; the actions before it stay done and the ones after it are not run (`not_run`).
5. A broker outage loses no trigger: `sweep_events` (beat, every minute) evaluates the events of the last
   SWEEP_LOOKBACK that some enabled rule listens to and that have no run for it yet, older than SWEEP_GRACE (so the
   queued path goes first), with the chain recorded for them.
6. Schedules: `sweep_schedules` (beat, every minute) takes due rules with FOR UPDATE SKIP LOCKED, moves each to its
   next tick and claims the tick's run in the same transaction (so two beats never run one tick; a worker lost
   after the claim leaves the run `running`: at most once), then runs them.
"""

import logging
import time
from contextvars import ContextVar
from datetime import datetime, timedelta
from itertools import groupby

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from redis.exceptions import RedisError

from apps.automations import actions as steps
from apps.automations.catalogue import MAX_CHAIN_DEPTH
from apps.automations.models import AutomationRule, AutomationRun, ChainedEvent, RunStatus, TriggerType
from apps.automations.schedules import next_tick
from apps.automations.subjects import Subject, evaluate, event_subjects, tick_subject
from apps.core.errors import ApiError
from apps.core.limits import take_token
from apps.events.models import Event

logger = logging.getLogger("apps.automations")

SWEEP_LOOKBACK = timedelta(minutes=30)
SWEEP_GRACE = timedelta(minutes=2)
SWEEP_BATCH = 2000
SCHEDULE_BATCH = 200
RUN_RETENTION = timedelta(days=90)
CHAIN_RETENTION = timedelta(days=1)
NOT_RUN = "not_run"

_chain: ContextVar[tuple[str, ...]] = ContextVar("automation_chain", default=())


def runs_per_hour() -> int:
    return int(getattr(settings, "SVC_AUTOMATIONS_RUNS_PER_HOUR", 1000))


# --- after a commit -----------------------------------------------------------------------------------------------


def _listened(event_ids) -> list[tuple]:
    """(id, organization id) of these events that an enabled rule of their practice listens to."""
    rules = AutomationRule.objects.unscoped().filter(
        organization_id=OuterRef("organization_id"), event_type=OuterRef("type"), enabled=True
    )
    return list(
        Event.objects.unscoped()
        .filter(id__in=list(event_ids))
        .filter(Exists(rules))
        .order_by("created_at", "id")
        .values_list("id", "organization_id")
    )


def queue_committed_events(event_ids) -> None:
    """The on_events_committed listener. Never raises (a failure is logged; the sweep evaluates what it missed)."""
    try:
        chain = _chain.get()
        rows = _listened(event_ids)
        if not rows:
            return
        if chain:
            ChainedEvent.objects.bulk_create(
                [ChainedEvent(organization_id=org, event_id=event_id, chain=list(chain)) for event_id, org in rows],
                ignore_conflicts=True,
            )
        from apps.automations.tasks import evaluate_events

        evaluate_events.delay([str(event_id) for event_id, _ in rows], list(chain))
    except Exception as exc:
        logger.warning("automations for %d events not queued (%s)", len(event_ids), type(exc).__name__)


# --- one run --------------------------------------------------------------------------------------------------------


def _claim(run: AutomationRun) -> bool:
    """Insert the run; False when this rule already has a run for this trigger (nothing is done twice)."""
    try:
        with transaction.atomic():
            run.save(force_insert=True)
    except IntegrityError:
        return False
    return True


def _take_token(organization_id) -> bool:
    limit = runs_per_hour()
    try:
        allowed, _ = take_token(f"automations:runs:{organization_id}", burst=limit, per_second=limit / 3600)
    except RedisError:
        logger.warning("automation run limit not checked (Redis unavailable): the run goes ahead")
        return True
    return allowed


def _finish(run: AutomationRun, status: str, reason: str = "", **fields) -> AutomationRun:
    run.status, run.reason, run.finished_at = status, reason[:300], timezone.now()
    for name, value in fields.items():
        setattr(run, name, value)
    AutomationRun.objects.for_org(run.organization_id).filter(id=run.id).update(
        status=run.status,
        reason=run.reason,
        finished_at=run.finished_at,
        actions=run.actions,
        updated_at=run.finished_at,
    )
    return run


def _execute(rule: AutomationRule, run: AutomationRun, subject: Subject, chain: tuple[str, ...]) -> AutomationRun:
    outcomes: list[dict] = []
    failure = ""
    token = _chain.set((*chain, str(rule.id)))
    try:
        for index, action in enumerate(rule.actions):
            outcome = {"index": index, "type": action["type"]}
            if failure:
                outcomes.append({**outcome, "status": NOT_RUN})
                continue
            started = time.monotonic()
            try:
                step = steps.plan(rule.organization, action, subject)
                outcome["target"] = step.target
                if step.skip:
                    outcome |= {"status": "skipped", "reason": step.skip}
                else:
                    outcome |= {"status": "succeeded", "result": steps.perform(rule.organization, step)}
            except ApiError as error:
                failure = f"actions[{index}] {action['type']}: {error.code} {error.message}"
                outcome |= {"status": "failed", "reason": error.code, "message": error.message}
            except Exception as error:  # an unexpected failure of one action must not lose the run's record
                logger.exception("automation %s action %d failed (run %s)", rule.id, index, run.id)
                failure = f"actions[{index}] {action['type']}: {type(error).__name__}"
                outcome |= {"status": "failed", "reason": "ACTION_ERROR", "message": type(error).__name__}
            outcome["durationMs"] = round((time.monotonic() - started) * 1000, 1)
            outcomes.append(outcome)
    finally:
        _chain.reset(token)
    return _finish(run, RunStatus.FAILED if failure else RunStatus.SUCCEEDED, failure, actions=outcomes)


def run_rule(rule: AutomationRule, subject: Subject, *, chain: tuple[str, ...] = ()) -> AutomationRun | None:
    """Evaluate one rule for one trigger and record the run. None when it was already evaluated for it."""
    event = subject.event
    passed, verdicts = evaluate(rule.conditions, subject)
    run = AutomationRun(
        organization_id=rule.organization_id,
        rule=rule,
        trigger_type=rule.trigger_type,
        event_id=event.id if event is not None else None,
        event_type=event.type if event is not None else "",
        tick_at=subject.tick_at,
        subject_type=subject.subject_type,
        subject_id=subject.subject_id,
        conditions=verdicts,
        chain=list(chain),
        depth=len(chain),
        started_at=timezone.now(),
        status=RunStatus.RUNNING,
    )
    if not passed:
        run.status, run.finished_at = RunStatus.SKIPPED, run.started_at
        return run if _claim(run) else None
    if str(rule.id) in chain or len(chain) >= MAX_CHAIN_DEPTH:
        run.status, run.finished_at = RunStatus.REFUSED_LOOP, run.started_at
        run.reason = (
            "the rule is already in this chain" if str(rule.id) in chain else f"the chain is {len(chain)} rules deep"
        )
        return run if _claim(run) else None
    if not _claim(run):
        return None
    if not _take_token(rule.organization_id):
        return _finish(run, RunStatus.LIMITED, f"the practice's limit of {runs_per_hour()} runs an hour is reached")
    return _execute(rule, run, subject, chain)


# --- events ---------------------------------------------------------------------------------------------------------


def evaluate_events(event_ids, chain=()) -> int:
    """Evaluate the enabled event rules of each event's practice for these committed events. Returns the runs
    recorded. Idempotent (a rule runs once per event)."""
    chain = tuple(str(rule_id) for rule_id in chain)
    events = list(
        Event.objects.unscoped().filter(id__in=list(event_ids)).order_by("organization_id", "created_at", "id")
    )
    recorded = 0
    for organization_id, group in groupby(events, key=lambda e: e.organization_id):
        group = list(group)
        rules = list(
            AutomationRule.objects.for_org(organization_id)
            .select_related("organization")
            .filter(enabled=True, trigger_type=TriggerType.EVENT, event_type__in={e.type for e in group})
            .order_by("created_at", "id")
        )
        if not rules:
            continue
        subjects = event_subjects(organization_id, group)
        for event in group:
            for rule in rules:
                # A rule reacts to the events after it was made (the sweep must not replay older ones).
                if rule.event_type == event.type and event.created_at >= rule.created_at:
                    recorded += run_rule(rule, subjects[event.id], chain=chain) is not None
    return recorded


def sweep_events(now: datetime | None = None) -> int:
    """Evaluate listened-to events of the last SWEEP_LOOKBACK whose evaluation was lost (broker outage, a worker
    lost before it started), with the chains recorded for them. Returns the runs recorded."""
    now = now or timezone.now()
    recorded = 0
    practices = (
        AutomationRule.objects.unscoped()
        .filter(enabled=True, trigger_type=TriggerType.EVENT)
        .values_list("organization_id", flat=True)
        .distinct()
    )
    for organization_id in practices:
        # A rule listening to the event's type, made before it, with no run for it yet.
        unevaluated = (
            AutomationRule.objects.for_org(organization_id)
            .filter(
                enabled=True,
                trigger_type=TriggerType.EVENT,
                event_type=OuterRef("type"),
                created_at__lte=OuterRef("created_at"),
            )
            .exclude(
                Exists(
                    AutomationRun.objects.for_org(organization_id).filter(
                        rule_id=OuterRef("pk"), event_id=OuterRef(OuterRef("id"))
                    )
                )
            )
        )
        pending = list(
            Event.objects.for_org(organization_id)
            .filter(created_at__gte=now - SWEEP_LOOKBACK, created_at__lte=now - SWEEP_GRACE)
            .filter(Exists(unevaluated))
            .order_by("created_at", "id")
            .values_list("id", flat=True)[:SWEEP_BATCH]
        )
        if not pending:
            continue
        chains = dict(
            ChainedEvent.objects.for_org(organization_id).filter(event_id__in=pending).values_list("event_id", "chain")
        )
        by_chain: dict[tuple, list] = {}
        for event_id in pending:
            by_chain.setdefault(tuple(chains.get(event_id, ())), []).append(event_id)
        for chain, ids in by_chain.items():
            recorded += evaluate_events(ids, chain)
    return recorded


# --- schedules -------------------------------------------------------------------------------------------------------


def sweep_schedules(now: datetime | None = None) -> int:
    """Run the schedule rules whose tick has come. Returns the runs recorded."""
    now = now or timezone.now()
    claimed: list[tuple[AutomationRule, AutomationRun, Subject]] = []
    with transaction.atomic():
        due = list(
            AutomationRule.objects.unscoped()
            .select_for_update(skip_locked=True, of=("self",))
            .select_related("organization")
            .filter(enabled=True, next_run_at__isnull=False, next_run_at__lte=now)
            .order_by("next_run_at")[:SCHEDULE_BATCH]
        )
        for rule in due:
            tick_at = rule.next_run_at
            rule.next_run_at = next_tick(rule.schedule, rule.organization, max(tick_at, now))
            AutomationRule.objects.for_org(rule.organization_id).filter(id=rule.id).update(next_run_at=rule.next_run_at)
            subject = tick_subject(rule.organization, tick_at)
            passed, verdicts = evaluate(rule.conditions, subject)
            run = AutomationRun(
                organization_id=rule.organization_id,
                rule=rule,
                trigger_type=TriggerType.SCHEDULE,
                tick_at=tick_at,
                conditions=verdicts,
                started_at=now,
                status=RunStatus.RUNNING if passed else RunStatus.SKIPPED,
                finished_at=None if passed else now,
            )
            if _claim(run) and passed:
                claimed.append((rule, run, subject))
    for rule, run, subject in claimed:
        if not _take_token(rule.organization_id):
            _finish(run, RunStatus.LIMITED, f"the practice's limit of {runs_per_hour()} runs an hour is reached")
        else:
            _execute(rule, run, subject, ())
    return len(due)


# --- retention -------------------------------------------------------------------------------------------------------


def purge(now: datetime | None = None) -> int:
    """Runs older than RUN_RETENTION and chain records older than CHAIN_RETENTION, practice by practice."""
    now = now or timezone.now()
    deleted = 0
    practices = AutomationRule.objects.unscoped().values_list("organization_id", flat=True).distinct()
    for organization_id in practices:
        deleted += AutomationRun.objects.for_org(organization_id).filter(created_at__lt=now - RUN_RETENTION).delete()[0]
        ChainedEvent.objects.for_org(organization_id).filter(created_at__lt=now - CHAIN_RETENTION).delete()
    return deleted
