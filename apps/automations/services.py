"""Writes of automations: rules (create, change, enable/disable, delete). Runs are written by apps.automations.runner.

Rule bodies are checked by apps.automations.validation (catalogue and practice); a schedule rule that is enabled
gets its next tick (`next_run_at`), computed in the practice's timezone.
"""

from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.automations.errors import RuleLimitReached
from apps.automations.models import AutomationRule, TriggerType
from apps.automations.schedules import next_tick
from apps.automations.validation import check_rule

MAX_RULES = 200


def trigger_of(rule: AutomationRule) -> dict[str, Any]:
    """The rule's trigger as the API shows it (snake_case keys)."""
    if rule.trigger_type == TriggerType.EVENT:
        return {"type": "event", "event_type": rule.event_type}
    return {"type": "schedule", **(rule.schedule or {})}


def _apply(rule: AutomationRule, organization, data: dict[str, Any]) -> None:
    checked = check_rule(organization, data)
    rule.trigger_type, rule.event_type, rule.schedule = checked.trigger_type, checked.event_type, checked.schedule
    rule.conditions, rule.actions = checked.conditions, checked.actions
    if "name" in data:
        rule.name = data["name"]
    if "enabled" in data:
        rule.enabled = data["enabled"]
    due = rule.enabled and rule.trigger_type == TriggerType.SCHEDULE
    rule.next_run_at = next_tick(rule.schedule, organization, timezone.now()) if due else None


@transaction.atomic
def rule_create(*, organization, user, data: dict[str, Any]) -> AutomationRule:
    if AutomationRule.objects.for_org(organization).count() >= MAX_RULES:
        raise RuleLimitReached(MAX_RULES)
    rule = AutomationRule(organization=organization, created_by=user, enabled=True)
    _apply(rule, organization, {"conditions": [], **data})
    rule.save(force_insert=True)
    return rule


@transaction.atomic
def rule_update(*, organization, rule_id, data: dict[str, Any]) -> AutomationRule:
    """A patch: the given parts replace the rule's; the whole rule is checked again (a new trigger must suit the
    conditions kept). A changed schedule or a rule enabled again gets its next tick from now."""
    rule = AutomationRule.objects.for_org(organization).select_for_update().get(id=rule_id)
    merged = {"trigger": trigger_of(rule), "conditions": rule.conditions, "actions": rule.actions, **data}
    _apply(rule, organization, merged)
    rule.save()
    return rule


@transaction.atomic
def rule_delete(*, organization, rule_id) -> None:
    """The rule and its runs."""
    AutomationRule.objects.for_org(organization).filter(id=rule_id).delete()
