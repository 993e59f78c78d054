"""How a journey row reads on the wire: the journeys routes, the patient embed and the Today view render it."""

from rest_framework import serializers

from apps.core.wire import Camelized, datetime_string, decimal_string, uuid_string
from apps.journeys.models import JourneyStatus
from apps.journeys.selectors import journeys_of_patient


class JourneyStageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    kind = serializers.CharField()
    archived = serializers.SerializerMethodField()

    class Meta:
        ref_name = "JourneyStage"

    def get_archived(self, stage) -> bool:
        return stage.archived_at is not None


class JourneyTreatmentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()

    class Meta:
        ref_name = "JourneyTreatment"


class JourneyPatientSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()

    class Meta:
        ref_name = "JourneyPatient"


class JourneySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    patient = JourneyPatientSerializer()
    treatment_id = serializers.UUIDField()
    treatment = JourneyTreatmentSerializer()
    pipeline_id = serializers.UUIDField()
    stage_id = serializers.UUIDField()
    stage = JourneyStageSerializer()
    status = serializers.ChoiceField(choices=JourneyStatus.choices)
    estimated_value = serializers.DecimalField(max_digits=12, decimal_places=2, help_text="Decimal string.")
    currency = serializers.CharField()
    assignee_id = serializers.UUIDField(allow_null=True, help_text="A member's user id.")
    source = serializers.CharField()
    lost_reason = serializers.CharField(help_text="Empty unless lost.")
    stage_entered_at = serializers.DateTimeField()
    won_at = serializers.DateTimeField(allow_null=True)
    lost_at = serializers.DateTimeField(allow_null=True)
    reopened_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Journey"


EMBED_JOURNEYS_LIMIT = 50


def embed_journeys_field() -> serializers.Field:
    return JourneySerializer(
        many=True, required=False, help_text=f"The patient's journeys, newest first (at most {EMBED_JOURNEYS_LIMIT})."
    )


def embed_journeys(*, organization, patient) -> list:
    """GET /patients/{id}?embed=journeys (registered in JourneysConfig.ready)."""
    rows = journeys_of_patient(organization=organization, patient_id=patient.id, limit=EMBED_JOURNEYS_LIMIT)
    return JourneySerializer(rows, many=True).data


# --- a journey row from values, without a serializer per row ---------------------------------------------------------


def journey_row(values: dict) -> Camelized:
    """JourneySerializer's output as the renderer writes it (camelCase keys, same order and values) for a
    .values(*JOURNEY_VALUES) row (apps.journeys.selectors.journey_values). tests/journeys prove it identical."""
    stage_id = str(values["stage_id"])
    patient_id = str(values["patient_id"])
    treatment_id = str(values["treatment_id"])
    return Camelized(
        id=str(values["id"]),
        patientId=patient_id,
        patient=Camelized(
            id=patient_id, firstName=values["patient__first_name"], lastName=values["patient__last_name"]
        ),
        treatmentId=treatment_id,
        treatment=Camelized(id=treatment_id, name=values["treatment__name"]),
        pipelineId=str(values["pipeline_id"]),
        stageId=stage_id,
        stage=Camelized(
            id=stage_id,
            name=values["stage__name"],
            kind=values["stage__kind"],
            archived=values["stage__archived_at"] is not None,
        ),
        status=values["status"],
        estimatedValue=decimal_string(values["estimated_value"], max_digits=12, decimal_places=2),
        currency=values["currency"],
        assigneeId=uuid_string(values["assignee_id"]),
        source=values["source"],
        lostReason=values["lost_reason"],
        stageEnteredAt=datetime_string(values["stage_entered_at"]),
        wonAt=datetime_string(values["won_at"]),
        lostAt=datetime_string(values["lost_at"]),
        reopenedAt=datetime_string(values["reopened_at"]),
        createdAt=datetime_string(values["created_at"]),
        updatedAt=datetime_string(values["updated_at"]),
    )


def stage_row(stage) -> Camelized:
    """StageSerializer's output (api/serializers.py), camelCased, for a Stage."""
    return Camelized(
        id=str(stage.id),
        name=stage.name,
        kind=stage.kind,
        position=stage.position,
        archived=stage.archived_at is not None,
        archivedAt=datetime_string(stage.archived_at),
    )


def board(pipeline_id, columns: list[dict]) -> Camelized:
    """BoardSerializer's output, camelCased, for apps.journeys.selectors.journey_board's columns."""
    return Camelized(
        pipelineId=str(pipeline_id),
        columns=[
            Camelized(
                stage=stage_row(column["stage"]),
                count=column["count"],
                valueSum=decimal_string(column["value_sum"], max_digits=16, decimal_places=2),
                items=[journey_row(values) for values in column["items"]],
            )
            for column in columns
        ],
    )
