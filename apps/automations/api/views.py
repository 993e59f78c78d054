"""Routes of automations (tag automations): rules, their runs, the dry run and the catalogue.

Every route needs automation:manage (owners and managers) and the settings scope area. Another practice's rule in a
path answers 404; another practice's id in a body or query answers 400 naming the place."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.automations import catalogue as cat
from apps.automations import selectors, services
from apps.automations.api import serializers as s
from apps.automations.models import AutomationRule
from apps.automations.validation import check_rule
from apps.core.naming import to_camel
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView
from apps.events.catalogue import CATALOGUE

TAGS = ["automations"]
ACCESS = "Permission automation:manage (owners and managers); scope area settings."
RULE_BODY = (
    "trigger: {type: event, eventType} (a catalogue event) or {type: schedule, frequency: daily|weekly, time: HH:MM "
    "(practice time), weekday: 0-6 for weekly}. conditions: up to 20 {field, operator, value}, all must hold, over "
    "the trigger's fields. actions: 1 to 10 {type, params}, run in order: create_task, send_template, move_stage, "
    "add_tag, remove_tag, set_patient_status (no webhook action; a schedule trigger allows create_task only). See "
    "GET /automations/catalogue. Unknown event types, fields, operators, action types and parameters, and ids that "
    "are not the practice's, answer 400 VALIDATION_ERROR with details.fields naming the place (e.g. "
    "trigger.eventType, conditions[0].operator, actions[1].params.stageId)."
)
CONFLICT = OpenApiResponse(ApiErrorSerializer, description="AUTOMATION_RULE_LIMIT: the practice has 200 rules.")


class AutomationView(BaseApiView):
    permission = "automation:manage"
    scope_area = "settings"

    def rule(self, id) -> AutomationRule:
        return self.get_tenant_object(AutomationRule, id)

    def page(self, queryset, row) -> Response:
        paginator = NewestFirstCursorPagination()
        page = paginator.paginate_queryset(queryset, self.request, view=self)
        return Response(paginator.get_paginated_response_data([row(item) for item in page]))


def rule_row(rule: AutomationRule) -> dict:
    return {
        "id": str(rule.id),
        "name": rule.name,
        "enabled": rule.enabled,
        "trigger": services.trigger_of(rule),
        "conditions": rule.conditions,
        "actions": rule.actions,
        "next_run_at": rule.next_run_at,
        "created_at": rule.created_at,
        "updated_at": rule.updated_at,
    }


def run_row(run) -> dict:
    return {
        "id": str(run.id),
        "rule_id": str(run.rule_id),
        "trigger_type": run.trigger_type,
        "event_id": str(run.event_id) if run.event_id else None,
        "event_type": run.event_type,
        "tick_at": run.tick_at,
        "subject_type": run.subject_type,
        "subject_id": run.subject_id,
        "status": run.status,
        "reason": run.reason,
        "conditions": run.conditions,
        "actions": run.actions,
        "chain": run.chain,
        "depth": run.depth,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "created_at": run.created_at,
    }


class RuleListView(AutomationView):
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="automations_list",
        parameters=[s.CursorQuerySerializer],
        responses={200: s.RuleListSerializer},
        summary="The practice's automation rules",
        description=f"{ACCESS} Newest first, cursor paging {{items, nextCursor}}.",
    )
    def get(self, request):
        self.parse_query(s.CursorQuerySerializer)
        return self.page(selectors.rules_of(organization=self.organization), rule_row)

    @extend_schema(
        tags=TAGS,
        operation_id="automations_create",
        request=s.RuleCreateSerializer,
        responses={201: s.RuleSerializer, 409: CONFLICT},
        summary="Add an automation rule",
        description=f"{ACCESS} name, enabled (default true), {RULE_BODY} A practice has at most 200 rules (409 "
        "AUTOMATION_RULE_LIMIT). An event rule reacts to events recorded after it was made.",
    )
    def post(self, request):
        data = self.parse_body(s.RuleCreateSerializer).validated_data
        rule = services.rule_create(organization=self.organization, user=request.user, data=dict(data))
        return Response(rule_row(rule), status=201)


class RuleView(AutomationView):
    @extend_schema(
        tags=TAGS,
        operation_id="automations_read",
        responses={200: s.RuleSerializer},
        summary="Read one automation rule",
        description=f"{ACCESS} Another practice's rule answers 404.",
    )
    def get(self, request, id):
        return Response(rule_row(self.rule(id)))

    @extend_schema(
        tags=TAGS,
        operation_id="automations_update",
        request=s.RulePatchSerializer,
        responses={200: s.RuleSerializer},
        summary="Change an automation rule",
        description=f"{ACCESS} Any of name, enabled, trigger, conditions, actions; a given part replaces the rule's "
        f"and the whole rule is checked again. {RULE_BODY} A changed schedule, or a schedule rule enabled again, "
        "gets its next tick from now.",
    )
    def patch(self, request, id):
        self.rule(id)
        data = self.parse_body(s.RulePatchSerializer).validated_data
        rule = services.rule_update(organization=self.organization, rule_id=id, data=dict(data))
        return Response(rule_row(rule))

    @extend_schema(
        tags=TAGS,
        operation_id="automations_delete",
        responses={204: None},
        summary="Delete an automation rule",
        description=f"{ACCESS} The rule and its runs are deleted; what its runs did stays done.",
    )
    def delete(self, request, id):
        self.rule(id)
        services.rule_delete(organization=self.organization, rule_id=id)
        return Response(status=204)


class _SwitchView(AutomationView):
    enabled = True

    def post(self, request, id):
        self.rule(id)
        rule = services.rule_update(organization=self.organization, rule_id=id, data={"enabled": self.enabled})
        return Response(rule_row(rule))


class RuleEnableView(_SwitchView):
    enabled = True

    @extend_schema(
        tags=TAGS,
        operation_id="automations_enable",
        request=None,
        responses={200: s.RuleSerializer},
        summary="Enable an automation rule",
        description=f"{ACCESS} Idempotent. The rule is checked again (a stage or tag it names may have gone: 400). "
        "A schedule rule gets its next tick from now.",
    )
    def post(self, request, id):
        return super().post(request, id)


class RuleDisableView(_SwitchView):
    enabled = False

    @extend_schema(
        tags=TAGS,
        operation_id="automations_disable",
        request=None,
        responses={200: s.RuleSerializer},
        summary="Disable an automation rule",
        description=f"{ACCESS} Idempotent. A disabled rule reacts to nothing; its runs stay.",
    )
    def post(self, request, id):
        return super().post(request, id)


RUNS_DESCRIPTION = (
    "Newest first, cursor paging {items, nextCursor}. Filters: status (running, succeeded, failed, skipped, "
    "refused_loop, limited), from and to (ISO 8601 with an offset; from inclusive, to exclusive). Each run has the "
    "verdict of every condition, the outcome of every action (succeeded, failed with a code, skipped with a reason, "
    "not_run after a failure), and the chain of rules that led to it. Runs are kept 90 days."
)


def _run_query(query: dict, rule_id=None) -> selectors.RunQuery:
    rule = query.get("rule_id")
    return selectors.RunQuery(
        status=query.get("status"),
        rule_id=rule_id or (rule.id if rule is not None else None),
        created_from=query.get("from"),
        created_to=query.get("to"),
    )


class RunListView(AutomationView):
    @extend_schema(
        tags=TAGS,
        operation_id="automations_runs_list",
        parameters=[s.RunQuerySerializer],
        responses={200: s.RunPageSerializer},
        summary="Runs of the practice's automation rules",
        description=f"{ACCESS} {RUNS_DESCRIPTION} ruleId narrows to one rule (another practice's: 400).",
    )
    def get(self, request):
        query = self.parse_query(s.RunQuerySerializer).validated_data
        return self.page(selectors.runs_of(organization=self.organization, query=_run_query(query)), run_row)


class RuleRunListView(AutomationView):
    @extend_schema(
        tags=TAGS,
        operation_id="automations_rule_runs_list",
        parameters=[s.RuleRunQuerySerializer],
        responses={200: s.RunPageSerializer},
        summary="Runs of one automation rule",
        description=f"{ACCESS} {RUNS_DESCRIPTION}",
    )
    def get(self, request, id):
        rule = self.rule(id)
        query = self.parse_query(s.RuleRunQuerySerializer).validated_data
        runs = selectors.runs_of(organization=self.organization, query=_run_query(query, rule.id))
        return self.page(runs, run_row)


DRY_RUN_DESCRIPTION = (
    "Evaluates the rule over the practice's events of its type from the last 7 days (newest first, at most 5,000 "
    "evaluated: scanTruncated) or, for a schedule, over the ticks of those 7 days. Returns matchedTotal and the first "
    "500 matches, each with its event (or tick), the conditions' verdicts and the actions it would have taken with "
    "their resolved targets (or why an action would be skipped). Patient fields are read as they are now. Writes "
    "nothing: no run, task, message, move or tag."
)


class RuleDryRunView(AutomationView):
    @extend_schema(
        tags=TAGS,
        operation_id="automations_dry_run",
        request=None,
        responses={200: s.DryRunResultSerializer},
        summary="What a saved rule would have done over the last 7 days",
        description=f"{ACCESS} {DRY_RUN_DESCRIPTION} Works on disabled rules too.",
    )
    def post(self, request, id):
        rule = self.rule(id)
        body = {"trigger": services.trigger_of(rule), "conditions": rule.conditions, "actions": rule.actions}
        checked = check_rule(self.organization, body)
        return Response(selectors.dry_run(organization=self.organization, rule=checked))


class DryRunView(AutomationView):
    @extend_schema(
        tags=TAGS,
        operation_id="automations_dry_run_unsaved",
        request=s.DryRunSerializer,
        responses={200: s.DryRunResultSerializer},
        summary="What an unsaved rule would have done over the last 7 days",
        description=f"{ACCESS} The body is a rule (name optional; {RULE_BODY}) {DRY_RUN_DESCRIPTION}",
    )
    def post(self, request):
        data = self.parse_body(s.DryRunSerializer).validated_data
        checked = check_rule(self.organization, dict(data))
        return Response(selectors.dry_run(organization=self.organization, rule=checked))


def _fields(fields) -> list[dict]:
    return [
        {"name": f.name, "kind": f.kind, "description": f.description, "choices": list(f.choices), "ref": f.ref}
        for f in fields
    ]


def catalogue_body() -> dict:
    groups = {name: group for group, names in CATALOGUE.items() for name in names}
    return {
        "triggers": {
            "events": [
                {"type": name, "group": groups[name], "fields": _fields(cat.event_fields(name).values())}
                for name in groups
            ],
            "schedule": {"frequencies": list(cat.SCHEDULE_FREQUENCIES), "fields": _fields(cat.SCHEDULE_FIELDS)},
        },
        "operators": {"byKind": {k: list(v) for k, v in cat.OPERATORS.items()}, "meanings": cat.OPERATOR_HELP},
        "actions": [
            {
                "type": a.name,
                "description": a.description,
                "needs": a.needs,
                "params": [
                    {
                        "name": to_camel(p.name),
                        "kind": p.kind,
                        "required": p.required,
                        "description": p.description,
                        "choices": list(p.choices),
                        "ref": p.ref,
                    }
                    for p in a.params
                ],
            }
            for a in cat.ACTIONS.values()
        ],
        "limits": {
            "rulesPerPractice": services.MAX_RULES,
            "conditionsPerRule": cat.MAX_CONDITIONS,
            "actionsPerRule": cat.MAX_ACTIONS,
            "chainDepth": cat.MAX_CHAIN_DEPTH,
            "dryRunDays": selectors.DRY_RUN_DAYS,
            "dryRunMatches": selectors.DRY_RUN_MATCHES,
        },
    }


class CatalogueView(AutomationView):
    @extend_schema(
        tags=TAGS,
        operation_id="automations_catalogue",
        responses={200: s.CatalogueSerializer},
        summary="What automation rules can be made of",
        description=f"{ACCESS} The triggers (the 40 catalogue events with their condition fields; schedules), the "
        "operators each field kind allows, the action types with their parameters, and the limits.",
    )
    def get(self, request):
        return Response(catalogue_body())
