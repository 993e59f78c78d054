"""Automation rules and their runs.

A rule is triggered by a catalogue event (`event_type`) or by a schedule (`schedule`: daily or weekly at a time of
the practice's clock, with `next_run_at` the due row the beat sweep takes with SKIP LOCKED). Its `conditions` and
`actions` are JSON lists validated against apps.automations.catalogue (snake_case keys inside; camelCase on the wire).

A run records one evaluation of one rule for one trigger (an event, or a schedule tick): its outcome, the verdict of
every condition, the outcome of every action, and the chain of rules that led to it (loop refusal).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.core.models import TenantModel
from apps.events.catalogue import EVENT_TYPE_CHOICES


class TriggerType(models.TextChoices):
    EVENT = "event"
    SCHEDULE = "schedule"


class AutomationRule(TenantModel):
    name = models.CharField(max_length=200)
    enabled = models.BooleanField(default=True)
    trigger_type = models.CharField(max_length=12, choices=TriggerType.choices)
    event_type = models.CharField(max_length=64, choices=EVENT_TYPE_CHOICES, blank=True, default="")
    # {"frequency": "daily"|"weekly", "time": "HH:MM", "weekday": 0-6 (Monday 0) or None}; practice time.
    schedule = models.JSONField(null=True, blank=True)
    # The next tick of an enabled schedule rule (null otherwise): the beat sweep's due row.
    next_run_at = models.DateTimeField(null=True, blank=True)
    conditions = models.JSONField(default=list, blank=True)  # [{"field", "operator", "value"}]
    actions = models.JSONField(default=list)  # [{"type", "params"}]
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [
            models.Index(
                models.F("organization"),
                models.F("created_at").desc(),
                models.F("id").desc(),
                name="autom_rule_list_idx",
            ),
            # The listener's question: this practice's enabled rules for these event types.
            models.Index(fields=["organization", "event_type"], condition=Q(enabled=True), name="autom_rule_event_idx"),
            # The schedule sweep (every practice): enabled schedule rules whose tick has come.
            models.Index(
                fields=["next_run_at"],
                condition=Q(enabled=True, next_run_at__isnull=False),
                name="autom_rule_due_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"automation {self.name}"


class RunStatus(models.TextChoices):
    RUNNING = "running"  # claimed; its actions are being run (a worker lost mid-run leaves it here)
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # an action failed: the earlier actions stay done
    SKIPPED = "skipped"  # the conditions were false
    REFUSED_LOOP = "refused_loop"  # the rule was already in the chain, or the chain was too deep
    LIMITED = "limited"  # the practice's hourly run limit was reached


class AutomationRun(TenantModel):
    rule = models.ForeignKey(AutomationRule, on_delete=models.CASCADE, related_name="runs")
    trigger_type = models.CharField(max_length=12, choices=TriggerType.choices)
    event_id = models.UUIDField(null=True, blank=True)  # the triggering event (event rules)
    event_type = models.CharField(max_length=64, blank=True, default="")
    tick_at = models.DateTimeField(null=True, blank=True)  # the schedule tick (schedule rules)
    subject_type = models.CharField(max_length=64, blank=True, default="")
    subject_id = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=16, choices=RunStatus.choices)
    reason = models.CharField(max_length=300, blank=True, default="")
    conditions = models.JSONField(default=list, blank=True)  # [{"field", "operator", "value", "actual", "passed"}]
    actions = models.JSONField(default=list, blank=True)  # [{"index", "type", "status", "target", "reason"}]
    chain = models.JSONField(default=list, blank=True)  # rule ids that led here, first first (this one excluded)
    depth = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                models.F("organization"),
                models.F("created_at").desc(),
                models.F("id").desc(),
                name="autom_run_list_idx",
            ),
            models.Index(
                models.F("organization"),
                models.F("rule"),
                models.F("created_at").desc(),
                models.F("id").desc(),
                name="autom_run_rule_idx",
            ),
        ]
        constraints = [
            # The same event never runs a rule twice; nor does the same schedule tick.
            models.UniqueConstraint(
                fields=["organization", "rule", "event_id"],
                condition=Q(event_id__isnull=False),
                name="autom_run_event_unique",
            ),
            models.UniqueConstraint(
                fields=["organization", "rule", "tick_at", "subject_id"],
                condition=Q(tick_at__isnull=False),
                name="autom_run_tick_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"automation run {self.id} ({self.status})"


class ChainedEvent(TenantModel):
    """An event an automation's action caused, with the chain of rules behind it, so the recovery sweep (which
    evaluates events whose queued evaluation was lost) refuses loops as the listener does."""

    event_id = models.UUIDField()
    chain = models.JSONField(default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "event_id"], name="autom_chained_event_unique")]
        indexes = [models.Index(fields=["organization", "created_at"], name="autom_chained_created_idx")]

    def __str__(self) -> str:
        return f"chained event {self.event_id}"
