"""How an appointment row reads on the wire: the appointment routes and the Today view render it."""

from rest_framework import serializers

from apps.appointments.models import AppointmentStatus, AppointmentType
from apps.core.wire import Camelized, datetime_string, uuid_string
from apps.journeys.public import JourneyPatientSerializer, JourneyTreatmentSerializer


class NamedRecordSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()

    class Meta:
        ref_name = "NamedRecord"


class AppointmentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    patient = JourneyPatientSerializer()
    practitioner_id = serializers.UUIDField()
    practitioner = NamedRecordSerializer()
    location_id = serializers.UUIDField(allow_null=True)
    location = NamedRecordSerializer(allow_null=True)
    treatment_id = serializers.UUIDField(allow_null=True)
    treatment = JourneyTreatmentSerializer(allow_null=True)
    journey_id = serializers.UUIDField(allow_null=True)
    appointment_type = serializers.ChoiceField(choices=AppointmentType.choices)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=AppointmentStatus.choices)
    status_changed_at = serializers.DateTimeField(allow_null=True)
    cancel_reason = serializers.CharField(help_text="Empty unless cancelled with a reason.")
    notes = serializers.CharField(help_text="For the team; never sent in events.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Appointment"


# The columns an appointment row is rendered from, read with .values() (the Today view): the same joins as
# apps.appointments.selectors.appointment_rows, without model instances.
APPOINTMENT_VALUES = (
    "id",
    "patient_id",
    "patient__first_name",
    "patient__last_name",
    "practitioner_id",
    "practitioner__name",
    "location_id",
    "location__name",
    "treatment_id",
    "treatment__name",
    "journey_id",
    "appointment_type",
    "starts_at",
    "ends_at",
    "status",
    "status_changed_at",
    "cancel_reason",
    "notes",
    "created_at",
    "updated_at",
)


def _named(record_id, name) -> Camelized | None:
    return None if record_id is None else Camelized(id=str(record_id), name=name)


def appointment_row(values: dict) -> Camelized:
    """AppointmentSerializer's output as the renderer writes it (camelCase keys, same order and values) for a
    .values(*APPOINTMENT_VALUES) row; tests/today prove it identical."""
    patient_id = str(values["patient_id"])
    return Camelized(
        id=str(values["id"]),
        patientId=patient_id,
        patient=Camelized(
            id=patient_id, firstName=values["patient__first_name"], lastName=values["patient__last_name"]
        ),
        practitionerId=str(values["practitioner_id"]),
        practitioner=_named(values["practitioner_id"], values["practitioner__name"]),
        locationId=uuid_string(values["location_id"]),
        location=_named(values["location_id"], values["location__name"]),
        treatmentId=uuid_string(values["treatment_id"]),
        treatment=_named(values["treatment_id"], values["treatment__name"]),
        journeyId=uuid_string(values["journey_id"]),
        appointmentType=values["appointment_type"],
        startsAt=datetime_string(values["starts_at"]),
        endsAt=datetime_string(values["ends_at"]),
        status=values["status"],
        statusChangedAt=datetime_string(values["status_changed_at"]),
        cancelReason=values["cancel_reason"],
        notes=values["notes"],
        createdAt=datetime_string(values["created_at"]),
        updatedAt=datetime_string(values["updated_at"]),
    )
