"""Wire shapes of the journeys area (camelCase on the wire through the renderer and parser)."""

from decimal import Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.accounts.models import Membership
from apps.core.fields import UUID_SCHEMA, StrictUUIDField, TenantRelatedField
from apps.core.serializers import NonEmptyPatchSerializer, StrictSerializer, offset_page_serializer
from apps.core.uuids import parse_uuid
from apps.journeys.currencies import ISO_4217
from apps.journeys.models import JourneyStatus, Pipeline, Stage, StageKind, Treatment
from apps.journeys.renderers import JourneySerializer
from apps.patients.public import Patient


class CurrencyField(serializers.CharField):
    default_error_messages = {"currency": "must be an ISO 4217 currency code (three capital letters, e.g. EUR)"}

    def __init__(self, **kwargs):
        super().__init__(min_length=3, max_length=3, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value not in ISO_4217:
            self.fail("currency")
        return value


class PageQuerySerializer(StrictSerializer):
    limit = serializers.IntegerField(min_value=1, max_value=200, default=100)
    offset = serializers.IntegerField(min_value=0, max_value=1_000_000, default=0)


# --- treatments -----------------------------------------------------------------------------------------------------


class TreatmentSerializer(serializers.Serializer):
    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField()
    category = serializers.CharField(help_text="Free grouping, e.g. Implants, Orthodontics; may be empty.")
    default_value = serializers.DecimalField(
        max_digits=12, decimal_places=2, help_text='Decimal string, e.g. "3500.00".'
    )
    currency = serializers.CharField(help_text="ISO 4217")
    duration_minutes = serializers.IntegerField(help_text="Usual appointment length; scheduling offers slots of it.")
    active = serializers.BooleanField()
    builtin = serializers.BooleanField(source="is_builtin", help_text="The practice's General enquiry.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Treatment"


class TreatmentWriteSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=120)
    category = serializers.CharField(max_length=80, required=False, allow_blank=True)
    default_value = serializers.DecimalField(
        max_digits=12, decimal_places=2, min_value=Decimal("0"), required=False, help_text="≥ 0, two decimals."
    )
    currency = CurrencyField(required=False, help_text="ISO 4217; EUR when left out.")
    duration_minutes = serializers.IntegerField(
        min_value=5, max_value=720, required=False, help_text="5 to 720 minutes; 30 when left out."
    )
    active = serializers.BooleanField(required=False)

    class Meta:
        ref_name = "TreatmentWrite"


class TreatmentListQuerySerializer(PageQuerySerializer):
    include_archived = serializers.BooleanField(required=False, default=False)
    category = serializers.CharField(required=False, max_length=80)


TreatmentPageSerializer = offset_page_serializer(TreatmentSerializer, "TreatmentPage")


# --- pipelines ------------------------------------------------------------------------------------------------------


class StageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=StageKind.choices)
    position = serializers.IntegerField(help_text="0-based; active stages first, archived ones after.")
    archived = serializers.SerializerMethodField()
    archived_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "Stage"

    def get_archived(self, stage) -> bool:
        return stage.archived_at is not None


class PipelineSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    is_default = serializers.BooleanField()
    stages = StageSerializer(many=True, source="ordered_stages", help_text="In board order.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Pipeline"


class PipelineListSerializer(serializers.Serializer):
    items = PipelineSerializer(many=True)

    class Meta:
        ref_name = "PipelineList"


class NewStageSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=80)
    kind = serializers.ChoiceField(choices=StageKind.choices)

    class Meta:
        ref_name = "NewPipelineStage"


class PipelineCreateSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=120)
    is_default = serializers.BooleanField(required=False, default=False)
    stages = NewStageSerializer(
        many=True,
        required=False,
        min_length=3,
        max_length=30,
        help_text="In board order: exactly one won, exactly one lost, at least one open, names unique "
        "(case-insensitive). Left out: New lead, Contacted, Consultation booked, Consultation attended, Plan "
        "presented, Won, Lost.",
    )

    class Meta:
        ref_name = "PipelineCreate"

    def validate_stages(self, stages):
        kinds = [stage["kind"] for stage in stages]
        problems = []
        if kinds.count(StageKind.WON) != 1 or kinds.count(StageKind.LOST) != 1:
            problems.append("must hold exactly one won and one lost stage")
        if StageKind.OPEN not in kinds:
            problems.append("must hold at least one open stage")
        names = [stage["name"].strip().lower() for stage in stages]
        if len(set(names)) != len(names):
            problems.append("stage names must be unique (case-insensitive)")
        if problems:
            raise serializers.ValidationError(problems)
        return stages


class PipelineUpdateSerializer(NonEmptyPatchSerializer):
    name = serializers.CharField(min_length=1, max_length=120, required=False)
    is_default = serializers.BooleanField(
        required=False, help_text="true makes this the practice's default; false alone is refused (409)."
    )

    class Meta:
        ref_name = "PipelineUpdate"


class StageCreateSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=80)
    kind = serializers.ChoiceField(
        choices=StageKind.choices,
        required=False,
        default=StageKind.OPEN,
        help_text="open (default). won and lost already exist: 409 PIPELINE_STAGES_INVALID.",
    )
    position = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=100,
        help_text="0-based place among the active stages; left out: just before the won and lost stages.",
    )

    class Meta:
        ref_name = "StageCreate"


class StageUpdateSerializer(NonEmptyPatchSerializer):
    name = serializers.CharField(min_length=1, max_length=80, required=False)
    archived = serializers.BooleanField(
        required=False,
        help_text="true archives (open stages only; one active open stage must remain), false restores.",
    )

    class Meta:
        ref_name = "StageUpdate"


class StageReorderSerializer(StrictSerializer):
    stage_ids = serializers.ListField(
        child=StrictUUIDField(),
        min_length=1,
        max_length=100,
        help_text="Every active stage of the pipeline exactly once, in the new order.",
    )

    class Meta:
        ref_name = "StageReorder"


# --- journeys -------------------------------------------------------------------------------------------------------


@extend_schema_field(UUID_SCHEMA)
class MemberField(serializers.Field):
    """A member of the request's practice, by user id; anyone else is "does not exist" (400)."""

    default_error_messages = {"invalid": "must be a UUID", "does_not_exist": "is not a member of this practice"}

    def to_internal_value(self, data):
        parsed = parse_uuid(data) if isinstance(data, str) else None
        if parsed is None:
            self.fail("invalid")
        membership = (
            Membership.objects.for_org(self.context["organization"])
            .select_related("user")
            .filter(user_id=parsed)
            .first()
        )
        if membership is None:
            self.fail("does_not_exist")
        return membership.user

    def to_representation(self, value):
        return str(value.pk)


JourneyPageSerializer = offset_page_serializer(JourneySerializer, "JourneyPage")


class JourneyCreateSerializer(StrictSerializer):
    patient_id = TenantRelatedField(Patient, source="patient")
    treatment_id = TenantRelatedField(
        Treatment, source="treatment", required=False, help_text="Default: the built-in General enquiry."
    )
    pipeline_id = TenantRelatedField(
        Pipeline, source="pipeline", required=False, help_text="Default: the practice's default pipeline."
    )
    stage_id = TenantRelatedField(
        Stage, source="stage", required=False, help_text="An active open stage; default: the first one."
    )
    estimated_value = serializers.DecimalField(
        max_digits=12, decimal_places=2, min_value=Decimal("0"), required=False, help_text="Default: the treatment's."
    )
    currency = CurrencyField(required=False, help_text="Default: the treatment's.")
    assignee_id = MemberField(source="assignee", required=False, allow_null=True, help_text="Default: you.")
    source = serializers.CharField(
        max_length=80, required=False, allow_blank=True, help_text="Where the lead came from."
    )

    class Meta:
        ref_name = "JourneyCreate"


class JourneyUpdateSerializer(NonEmptyPatchSerializer):
    treatment_id = TenantRelatedField(Treatment, source="treatment", required=False)
    estimated_value = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=Decimal("0"), required=False)
    currency = CurrencyField(required=False)
    assignee_id = MemberField(source="assignee", required=False, allow_null=True, help_text="null unassigns.")
    source = serializers.CharField(max_length=80, required=False, allow_blank=True)

    class Meta:
        ref_name = "JourneyUpdate"


class JourneyMoveSerializer(StrictSerializer):
    stage_id = TenantRelatedField(Stage, source="stage", help_text="An active open stage of the journey's pipeline.")

    class Meta:
        ref_name = "JourneyMove"


class JourneyLoseSerializer(StrictSerializer):
    reason = serializers.CharField(min_length=1, max_length=500, help_text="Why the patient did not go ahead.")

    class Meta:
        ref_name = "JourneyLose"


class JourneyReopenSerializer(StrictSerializer):
    stage_id = TenantRelatedField(
        Stage, source="stage", required=False, help_text="Default: the open stage it left, else the first open one."
    )

    class Meta:
        ref_name = "JourneyReopen"


class JourneyFilterSerializer(StrictSerializer):
    pipeline_id = StrictUUIDField(required=False)
    stage_id = StrictUUIDField(required=False)
    status = serializers.ChoiceField(choices=JourneyStatus.choices, required=False)
    assignee_id = StrictUUIDField(required=False)
    treatment_id = StrictUUIDField(required=False)
    patient_id = StrictUUIDField(required=False)
    created_after = serializers.DateTimeField(required=False, help_text="Inclusive.")
    created_before = serializers.DateTimeField(required=False, help_text="Exclusive.")
    updated_after = serializers.DateTimeField(required=False)
    updated_before = serializers.DateTimeField(required=False)
    won_after = serializers.DateTimeField(required=False)
    won_before = serializers.DateTimeField(required=False)
    lost_after = serializers.DateTimeField(required=False)
    lost_before = serializers.DateTimeField(required=False)


class JourneyListQuerySerializer(JourneyFilterSerializer):
    limit = serializers.IntegerField(min_value=1, max_value=100, default=25)
    offset = serializers.IntegerField(min_value=0, max_value=1_000_000, default=0)


class JourneyBoardQuerySerializer(JourneyFilterSerializer):
    per_stage = serializers.IntegerField(min_value=0, max_value=100, default=20, help_text="Journeys per column.")


class BoardColumnSerializer(serializers.Serializer):
    stage = StageSerializer()
    count = serializers.IntegerField()
    value_sum = serializers.DecimalField(max_digits=16, decimal_places=2, help_text="Sum of estimatedValue.")
    items = JourneySerializer(many=True, help_text="The most recently moved perStage journeys.")

    class Meta:
        ref_name = "JourneyBoardColumn"


class BoardSerializer(serializers.Serializer):
    pipeline_id = serializers.UUIDField()
    columns = BoardColumnSerializer(many=True)

    class Meta:
        ref_name = "JourneyBoard"
