"""Wire shapes of automations. Rule bodies are parsed loosely here (trigger, conditions and actions as JSON) and
checked by apps.automations.validation, which names each place at fault; the documented shapes are below."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.automations.catalogue import ACTIONS, SCHEDULE_FREQUENCIES
from apps.automations.models import AutomationRule, RunStatus
from apps.core.fields import AwareDateTimeField, StrictBooleanField, TenantRelatedField, TextField
from apps.core.serializers import NonEmptyPatchSerializer, StrictSerializer
from apps.events.catalogue import EVENT_TYPES


class TriggerDoc(serializers.Serializer):
    type = serializers.ChoiceField(choices=["event", "schedule"])
    event_type = serializers.ChoiceField(choices=EVENT_TYPES, required=False, help_text="Event triggers.")
    frequency = serializers.ChoiceField(choices=SCHEDULE_FREQUENCIES, required=False, help_text="Schedules.")
    time = serializers.CharField(required=False, help_text="Schedules: HH:MM, practice time.")
    weekday = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=6, help_text="Weekly schedules: 0 Monday."
    )

    class Meta:
        ref_name = "AutomationTrigger"


class ConditionDoc(serializers.Serializer):
    field = serializers.CharField(help_text="A condition field of the trigger (GET /automations/catalogue).")
    operator = serializers.CharField(help_text="An operator the field's kind allows.")
    value = serializers.JSONField(help_text="A value, a list for in/not_in, true or false for exists.")

    class Meta:
        ref_name = "AutomationCondition"


class ActionDoc(serializers.Serializer):
    type = serializers.ChoiceField(choices=list(ACTIONS))
    params = serializers.DictField(help_text="The action type's parameters (GET /automations/catalogue).")

    class Meta:
        ref_name = "AutomationAction"


@extend_schema_field(TriggerDoc)
class TriggerField(serializers.JSONField):
    pass


@extend_schema_field(ConditionDoc(many=True))
class ConditionsField(serializers.JSONField):
    pass


@extend_schema_field(ActionDoc(many=True))
class ActionsField(serializers.JSONField):
    pass


class RuleCreateSerializer(StrictSerializer):
    name = TextField(max_length=200)
    enabled = StrictBooleanField(required=False)
    trigger = TriggerField()
    conditions = ConditionsField(required=False)
    actions = ActionsField()

    class Meta:
        ref_name = "AutomationRuleCreate"


class RulePatchSerializer(NonEmptyPatchSerializer):
    name = TextField(max_length=200, required=False)
    enabled = StrictBooleanField(required=False)
    trigger = TriggerField(required=False)
    conditions = ConditionsField(required=False)
    actions = ActionsField(required=False)

    class Meta:
        ref_name = "AutomationRulePatch"


class DryRunSerializer(StrictSerializer):
    """An unsaved rule: its trigger, conditions and actions (a name is not needed)."""

    name = TextField(max_length=200, required=False)
    trigger = TriggerField()
    conditions = ConditionsField(required=False)
    actions = ActionsField()

    class Meta:
        ref_name = "AutomationDryRunRule"


class RuleSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    enabled = serializers.BooleanField()
    trigger = TriggerField()
    conditions = ConditionsField()
    actions = ActionsField()
    next_run_at = serializers.DateTimeField(allow_null=True, help_text="Schedules: the next tick (UTC).")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "AutomationRule"


class RuleListSerializer(serializers.Serializer):
    items = RuleSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "AutomationRulePage"


class CursorQuerySerializer(StrictSerializer):
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100)

    class Meta:
        ref_name = "AutomationCursorQuery"


class RunQuerySerializer(CursorQuerySerializer):
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False)
    rule_id = TenantRelatedField(AutomationRule, required=False)
    from_ = AwareDateTimeField(required=False, help_text="Runs recorded at or after this time.")
    to = AwareDateTimeField(required=False, help_text="Runs recorded before this time.")

    class Meta:
        ref_name = "AutomationRunQuery"

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields

    def validate(self, attrs):
        if attrs.get("from") and attrs.get("to") and attrs["from"] >= attrs["to"]:
            raise serializers.ValidationError({"to": ["must be after from"]})
        return attrs


class RuleRunQuerySerializer(RunQuerySerializer):
    rule_id = None

    class Meta:
        ref_name = "AutomationRuleRunQuery"


class ActionOutcomeDoc(serializers.Serializer):
    index = serializers.IntegerField()
    type = serializers.CharField()
    status = serializers.ChoiceField(choices=["succeeded", "failed", "skipped", "not_run"])
    target = serializers.DictField(required=False, help_text="The resolved target (ids).")
    result = serializers.DictField(required=False, help_text="What was done (ids).")
    reason = serializers.CharField(required=False, help_text="Skipped or failed: a code.")
    message = serializers.CharField(required=False)
    duration_ms = serializers.FloatField(required=False)

    class Meta:
        ref_name = "AutomationActionOutcome"


class VerdictDoc(ConditionDoc):
    actual = serializers.JSONField(allow_null=True, help_text="The value the rule saw (null when missing).")
    passed = serializers.BooleanField()

    class Meta:
        ref_name = "AutomationConditionVerdict"


class RunSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    rule_id = serializers.UUIDField()
    trigger_type = serializers.ChoiceField(choices=["event", "schedule"])
    event_id = serializers.UUIDField(allow_null=True)
    event_type = serializers.CharField()
    tick_at = serializers.DateTimeField(allow_null=True)
    subject_type = serializers.CharField()
    subject_id = serializers.CharField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    reason = serializers.CharField()
    conditions = VerdictDoc(many=True)
    actions = ActionOutcomeDoc(many=True)
    chain = serializers.ListField(child=serializers.UUIDField(), help_text="Rule ids that led here, first first.")
    depth = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "AutomationRun"


class RunPageSerializer(serializers.Serializer):
    items = RunSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "AutomationRunPage"


class PlanDoc(serializers.Serializer):
    index = serializers.IntegerField()
    type = serializers.CharField()
    target = serializers.DictField(help_text="The resolved target (ids) the action would act on.")
    skip = serializers.CharField(allow_null=True, help_text="Why it would be skipped (NO_PATIENT, NO_JOURNEY, …).")

    class Meta:
        ref_name = "AutomationActionPlan"


class DryRunMatchSerializer(serializers.Serializer):
    event = serializers.DictField(allow_null=True, help_text="{id, type, createdAt, subject, actor}")
    tick_at = serializers.DateTimeField(allow_null=True)
    conditions = VerdictDoc(many=True)
    actions = PlanDoc(many=True)

    class Meta:
        ref_name = "AutomationDryRunMatch"


class DryRunResultSerializer(serializers.Serializer):
    from_ = serializers.DateTimeField()
    to = serializers.DateTimeField()
    evaluated = serializers.IntegerField(help_text="Events (or ticks) evaluated.")
    scan_truncated = serializers.BooleanField(help_text="More than 5,000 events: only the newest were evaluated.")
    matched_total = serializers.IntegerField()
    matches = DryRunMatchSerializer(many=True, help_text="The first 500 matches, newest first.")

    class Meta:
        ref_name = "AutomationDryRunResult"

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields


class CatalogueSerializer(serializers.Serializer):
    triggers = serializers.DictField(help_text="{events: [{type, group, fields}], schedule: {frequencies, fields}}")
    operators = serializers.DictField(help_text="Field kind → operators; operator → meaning.")
    actions = serializers.ListField(child=serializers.DictField(), help_text="[{type, description, needs, params}]")
    limits = serializers.DictField()

    class Meta:
        ref_name = "AutomationCatalogue"
