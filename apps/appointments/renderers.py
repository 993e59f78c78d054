"""How an appointment row reads on the wire: the appointment routes and the Today view render it."""

from rest_framework import serializers

from apps.appointments.models import AppointmentStatus, AppointmentType
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
