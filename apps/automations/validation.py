"""A rule body checked against the catalogue and the practice: 400 VALIDATION_ERROR naming every place at fault
(details.fields keys such as `trigger.eventType`, `conditions[0].operator`, `actions[1].params.stageId`).

Ids in conditions and action parameters must name records of the practice: another practice's id is the same
"does not exist in this practice" as an unknown one.
"""

import re
from dataclasses import dataclass
from typing import Any

from apps.accounts.models import Membership
from apps.automations import catalogue as cat
from apps.campaigns.public import MessageTemplate
from apps.core.errors import ValidationFailed
from apps.core.naming import to_camel
from apps.core.uuids import parse_uuid
from apps.events.catalogue import EVENT_TYPE_SET
from apps.journeys.public import Pipeline, Stage, StageKind, Treatment
from apps.patients.public import LeadSource, Location, Practitioner, Tag

TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
NOT_THERE = "does not exist in this practice"


def _refs(organization) -> dict[str, Any]:
    """ref name → a queryset of the practice whose ids (as values_list 'id') a value may name."""
    return {
        "stage": Stage.objects.for_org(organization),
        "open_stage": Stage.objects.for_org(organization).filter(kind=StageKind.OPEN, archived_at__isnull=True),
        "pipeline": Pipeline.objects.for_org(organization),
        "treatment": Treatment.objects.for_org(organization),
        "tag": Tag.objects.for_org(organization),
        "lead_source": LeadSource.objects.for_org(organization),
        "location": Location.objects.for_org(organization),
        "practitioner": Practitioner.objects.for_org(organization),
        "template": MessageTemplate.objects.for_org(organization),
    }


def ref_exists(organization, ref: str, value) -> bool:
    if ref == "member":
        return Membership.objects.for_org(organization).filter(user_id=value).exists()
    return _refs(organization)[ref].filter(id=value).exists()


@dataclass
class Rule:
    """A checked rule body (snake_case keys, ids as strings)."""

    trigger_type: str
    event_type: str
    schedule: dict | None
    conditions: list[dict]
    actions: list[dict]


class _Problems:
    def __init__(self):
        self.fields: dict[str, list[str]] = {}

    def add(self, path: str, problem: str) -> None:
        self.fields.setdefault(path, []).append(problem)

    def raise_any(self) -> None:
        if self.fields:
            path, problems = next(iter(self.fields.items()))
            raise ValidationFailed(f"{path}: {problems[0]}", details={"fields": self.fields})


def _scalar_ok(kind: str, value, choices: tuple[str, ...]) -> str | None:
    """None when `value` suits a field of this kind, else the problem."""
    if kind in (cat.STRING, cat.UUID):
        if not isinstance(value, str) or not value or len(value) > 200:
            return "must be a non-empty string of at most 200 characters"
        if kind == cat.UUID and parse_uuid(value) is None:
            return "must be a UUID"
        if choices and value not in choices:
            return f"must be one of {', '.join(choices)}"
        return None
    if kind == cat.BOOL:
        return None if isinstance(value, bool) else "must be true or false"
    if kind == cat.NUMBER:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else "must be a number"
    return "is not a value this field takes"


def _check_trigger(trigger, problems: _Problems) -> tuple[str, str, dict | None]:
    if not isinstance(trigger, dict):
        problems.add("trigger", "must be an object {type, ...}")
        return "", "", None
    kind = trigger.get("type")
    if kind == "event":
        unknown = set(trigger) - {"type", "event_type"}
        for key in sorted(unknown):
            problems.add(f"trigger.{to_camel(key)}", "is not a field of an event trigger")
        event_type = trigger.get("event_type")
        if event_type not in EVENT_TYPE_SET:
            problems.add("trigger.eventType", "must be an event type of the catalogue (GET /automations/catalogue)")
            return "event", "", None
        return "event", event_type, None
    if kind == "schedule":
        unknown = set(trigger) - {"type", "frequency", "time", "weekday"}
        for key in sorted(unknown):
            problems.add(f"trigger.{to_camel(key)}", "is not a field of a schedule trigger")
        frequency, time, weekday = trigger.get("frequency"), trigger.get("time"), trigger.get("weekday")
        if frequency not in cat.SCHEDULE_FREQUENCIES:
            problems.add("trigger.frequency", "must be daily or weekly")
        if not isinstance(time, str) or not TIME.match(time):
            problems.add("trigger.time", "must be a time HH:MM (24-hour, practice time)")
        if frequency == "weekly":
            if not isinstance(weekday, int) or isinstance(weekday, bool) or not 0 <= weekday <= 6:
                problems.add("trigger.weekday", "must be 0 (Monday) to 6 (Sunday) for a weekly schedule")
        elif weekday is not None:
            problems.add("trigger.weekday", "is only for a weekly schedule")
        schedule = {"frequency": frequency, "time": time, "weekday": weekday if frequency == "weekly" else None}
        return "schedule", "", schedule
    problems.add("trigger.type", "must be event or schedule")
    return "", "", None


def _check_conditions(organization, conditions, fields: dict[str, cat.Field], problems: _Problems) -> list[dict]:
    if not isinstance(conditions, list):
        problems.add("conditions", "must be a list")
        return []
    if len(conditions) > cat.MAX_CONDITIONS:
        problems.add("conditions", f"at most {cat.MAX_CONDITIONS} conditions")
        return []
    checked = []
    for index, condition in enumerate(conditions):
        at = f"conditions[{index}]"
        if not isinstance(condition, dict):
            problems.add(at, "must be an object {field, operator, value}")
            continue
        for key in sorted(set(condition) - {"field", "operator", "value"}):
            problems.add(f"{at}.{to_camel(key)}", "is not a part of a condition")
        name, operator, value = condition.get("field"), condition.get("operator"), condition.get("value")
        spec = fields.get(name) if isinstance(name, str) else None
        if spec is None:
            problems.add(f"{at}.field", "is not a condition field of this trigger (GET /automations/catalogue)")
            continue
        if operator not in cat.OPERATORS[spec.kind]:
            problems.add(f"{at}.operator", f"must be one of {', '.join(cat.OPERATORS[spec.kind])} for {name}")
            continue
        problem = _check_value(organization, spec, operator, value)
        if problem:
            problems.add(f"{at}.value", problem)
            continue
        checked.append({"field": name, "operator": operator, "value": value})
    return checked


def _check_value(organization, spec: cat.Field, operator: str, value) -> str | None:
    if operator == "exists":
        return None if isinstance(value, bool) else "must be true or false"
    element_kind = cat.UUID if spec.ref else cat.STRING if spec.kind == cat.LIST else spec.kind
    if operator in ("in", "not_in"):
        if not isinstance(value, list) or not 1 <= len(value) <= cat.MAX_LIST_VALUES:
            return f"must be a list of 1 to {cat.MAX_LIST_VALUES} values"
        values = value
    else:
        values = [value]
    for item in values:
        problem = _scalar_ok(element_kind, item, spec.choices)
        if problem:
            return problem
        if spec.ref and not ref_exists(organization, spec.ref, item):
            return f"{item} {NOT_THERE}"
    return None


def _check_params(organization, action: cat.ActionType, params, at: str, problems: _Problems) -> dict:
    if not isinstance(params, dict):
        problems.add(f"{at}.params", "must be an object")
        return {}
    known = {p.name: p for p in action.params}
    for key in sorted(set(params) - set(known)):
        problems.add(f"{at}.params.{to_camel(key)}", f"is not a parameter of {action.name}")
    checked = {}
    for param in action.params:
        where = f"{at}.params.{to_camel(param.name)}"
        value = params.get(param.name)
        if value is None:
            if param.required:
                problems.add(where, "is required")
            continue
        problem = _scalar_ok(param.kind, value, param.choices)
        if problem is None and param.name == "title" and len(value.strip()) == 0:
            problem = "must not be blank"
        if (
            problem is None
            and param.name == "due_in_minutes"
            and not (isinstance(value, int) and 0 <= value <= cat.MAX_DUE_MINUTES)
        ):
            problem = f"must be a whole number from 0 to {cat.MAX_DUE_MINUTES}"
        if problem is None and param.ref and not ref_exists(organization, param.ref, value):
            problem = NOT_THERE if param.ref != "open_stage" else f"{NOT_THERE} as an open, unarchived stage"
        if problem:
            problems.add(where, problem)
            continue
        checked[param.name] = value.strip() if param.name == "title" else value
    if action.name == "create_task" and "assignee_id" in checked and "assignee_role" in checked:
        problems.add(f"{at}.params.assigneeRole", "give assigneeId or assigneeRole, not both")
    return checked


def _check_actions(organization, actions, trigger_type: str, problems: _Problems) -> list[dict]:
    if not isinstance(actions, list) or not actions:
        problems.add("actions", "must be a list of 1 or more actions")
        return []
    if len(actions) > cat.MAX_ACTIONS:
        problems.add("actions", f"at most {cat.MAX_ACTIONS} actions")
        return []
    checked = []
    for index, action in enumerate(actions):
        at = f"actions[{index}]"
        if not isinstance(action, dict):
            problems.add(at, "must be an object {type, params}")
            continue
        for key in sorted(set(action) - {"type", "params"}):
            problems.add(f"{at}.{to_camel(key)}", "is not a part of an action")
        spec = cat.ACTIONS.get(action.get("type")) if isinstance(action.get("type"), str) else None
        if spec is None:
            problems.add(f"{at}.type", f"must be one of {', '.join(cat.ACTIONS)} (there is no webhook action)")
            continue
        if trigger_type == "schedule" and spec.needs:
            problems.add(f"{at}.type", f"{spec.name} needs a patient: a schedule trigger has none")
            continue
        params = _check_params(organization, spec, action.get("params", {}), at, problems)
        checked.append({"type": spec.name, "params": params})
    return checked


def check_rule(organization, data: dict) -> Rule:
    """The trigger, conditions and actions of a rule body (a create, or a patch merged over the rule)."""
    problems = _Problems()
    trigger_type, event_type, schedule = _check_trigger(data.get("trigger"), problems)
    fields = cat.event_fields(event_type) if trigger_type == "event" else cat.schedule_fields()
    conditions = (
        _check_conditions(organization, data.get("conditions", []), fields, problems)
        if trigger_type and (trigger_type == "schedule" or event_type)
        else []
    )
    actions = _check_actions(organization, data.get("actions"), trigger_type, problems)
    problems.raise_any()
    return Rule(trigger_type, event_type, schedule, conditions, actions)
