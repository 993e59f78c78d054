"""How a journey row reads on the wire: the journeys routes, the patient embed and the Today view render it."""

from rest_framework import serializers

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
