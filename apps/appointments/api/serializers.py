"""Wire shapes of appointments, the calendar and scheduling (camelCase on the wire; snake_case here)."""

from datetime import timedelta

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.appointments.models import AppointmentStatus, AppointmentType
from apps.appointments.renderers import AppointmentSerializer
from apps.core.fields import (
    UUID_LIST_SCHEMA,
    AwareDateTimeField,
    ClockTimeField,
    StrictUUIDField,
    TenantRelatedField,
    TextField,
)
from apps.core.serializers import (
    NonEmptyPatchSerializer,
    OffsetQuerySerializer,
    StrictSerializer,
    offset_page_serializer,
)
from apps.journeys.public import Journey, Treatment
from apps.patients.public import Location, Patient, Practitioner

SETTABLE_STATUSES = [s for s in AppointmentStatus.values if s != AppointmentStatus.CANCELLED]


AppointmentPageSerializer = offset_page_serializer(AppointmentSerializer, "AppointmentPage")


class AppointmentDetailsSerializer(StrictSerializer):
    """The fields a create and an update share (times move only through create and reschedule)."""

    location_id = TenantRelatedField(Location, allow_archived=False, required=False, allow_null=True, source="location")
    treatment_id = TenantRelatedField(Treatment, required=False, allow_null=True, source="treatment")
    journey_id = TenantRelatedField(Journey, required=False, allow_null=True, source="journey")
    appointment_type = serializers.ChoiceField(choices=AppointmentType.choices, required=False)
    notes = TextField(max_length=5000, required=False, allow_blank=True, allow_null=True)


class AppointmentCreateSerializer(AppointmentDetailsSerializer):
    patient_id = TenantRelatedField(Patient, allow_archived=False, source="patient")
    practitioner_id = TenantRelatedField(Practitioner, allow_archived=False, source="practitioner")
    starts_at = AwareDateTimeField()
    ends_at = AwareDateTimeField()

    class Meta:
        ref_name = "AppointmentCreate"


class AppointmentUpdateSerializer(AppointmentDetailsSerializer, NonEmptyPatchSerializer):
    practitioner_id = TenantRelatedField(Practitioner, allow_archived=False, required=False, source="practitioner")

    class Meta:
        ref_name = "AppointmentUpdate"


class AppointmentRescheduleSerializer(StrictSerializer):
    starts_at = AwareDateTimeField()
    ends_at = AwareDateTimeField()
    practitioner_id = TenantRelatedField(Practitioner, allow_archived=False, required=False, source="practitioner")
    location_id = TenantRelatedField(Location, allow_archived=False, required=False, allow_null=True, source="location")

    class Meta:
        ref_name = "AppointmentReschedule"


class AppointmentStatusSerializer(StrictSerializer):
    status = serializers.ChoiceField(
        choices=SETTABLE_STATUSES, help_text="booked, confirmed, arrived, completed or no_show; cancel has its route."
    )

    class Meta:
        ref_name = "AppointmentStatusChange"


class AppointmentCancelSerializer(StrictSerializer):
    reason = TextField(min_length=1, max_length=500, required=False)

    class Meta:
        ref_name = "AppointmentCancel"


class AppointmentListQuerySerializer(OffsetQuerySerializer):
    patient_id = StrictUUIDField(required=False)
    practitioner_id = StrictUUIDField(required=False)
    location_id = StrictUUIDField(required=False)
    status = serializers.ChoiceField(choices=AppointmentStatus.choices, required=False)
    starts_after = AwareDateTimeField(required=False, help_text="Starting at or after this instant (with an offset).")
    starts_before = AwareDateTimeField(required=False, help_text="Starting before this instant (with an offset).")


@extend_schema_field(UUID_LIST_SCHEMA)
class UuidListField(serializers.CharField):
    """Comma-separated UUIDs in one query parameter (at most 50)."""

    default_error_messages = {"uuid": "must be comma-separated UUIDs", "many": "at most 50 ids"}

    def to_internal_value(self, data):
        from apps.core.uuids import parse_uuid

        parts = [part.strip() for part in super().to_internal_value(data).split(",") if part.strip()]
        if len(parts) > 50:
            self.fail("many")
        ids = [parse_uuid(part) for part in parts]
        if not ids or any(value is None for value in ids):
            self.fail("uuid")
        return ids


MAX_CALENDAR_DAYS = 42


class CalendarQuerySerializer(StrictSerializer):
    start = AwareDateTimeField(source="range_start", help_text="Range start (inclusive), with an offset.")
    end = AwareDateTimeField(source="range_end", help_text=f"Range end (exclusive); at most {MAX_CALENDAR_DAYS} days.")
    practitioner_ids = UuidListField(required=False, help_text="Comma-separated practitioner ids (at most 50).")
    location_ids = UuidListField(required=False, help_text="Comma-separated location ids (at most 50).")
    include_cancelled = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs):
        if attrs["range_end"] <= attrs["range_start"]:
            raise serializers.ValidationError({"end": ["must be after start"]})
        # At most 42 days, so a six-week month grid fits; the hour of slack lets that grid cross the autumn clock
        # change (six local weeks then last 42 days and one hour).
        if attrs["range_end"] - attrs["range_start"] > timedelta(days=MAX_CALENDAR_DAYS, hours=1):
            raise serializers.ValidationError({"end": [f"the range spans at most {MAX_CALENDAR_DAYS} days"]})
        return attrs


class CalendarSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    timezone = serializers.CharField(help_text="The practice's IANA timezone.")
    items = AppointmentSerializer(many=True)

    class Meta:
        ref_name = "Calendar"


MAX_AVAILABILITY_DAYS = 31


class AvailabilityQuerySerializer(StrictSerializer):
    start_date = serializers.DateField(source="first_day", help_text="First day (practice local date).")
    end_date = serializers.DateField(
        source="last_day", help_text=f"Last day, inclusive; {MAX_AVAILABILITY_DAYS} at most."
    )
    treatment_id = StrictUUIDField(required=False, help_text="Slots as long as this treatment's durationMinutes.")
    duration_minutes = serializers.IntegerField(
        min_value=5, max_value=720, required=False, help_text="Slot length; instead of treatmentId."
    )
    step_minutes = serializers.IntegerField(min_value=5, max_value=120, default=15, help_text="Slot start spacing.")
    practitioner_ids = UuidListField(required=False, help_text="Comma-separated practitioner ids (at most 50).")
    location_id = StrictUUIDField(required=False)
    limit = serializers.IntegerField(min_value=1, max_value=500, default=200)

    def validate(self, attrs):
        if attrs["last_day"] < attrs["first_day"]:
            raise serializers.ValidationError({"endDate": ["must not be before startDate"]})
        if (attrs["last_day"] - attrs["first_day"]).days >= MAX_AVAILABILITY_DAYS:
            raise serializers.ValidationError({"endDate": [f"the range spans at most {MAX_AVAILABILITY_DAYS} days"]})
        if ("treatment_id" in attrs) == ("duration_minutes" in attrs):
            raise serializers.ValidationError(
                {"durationMinutes": ["send exactly one of treatmentId or durationMinutes"]}
            )
        return attrs


class SlotSerializer(serializers.Serializer):
    practitioner_id = serializers.UUIDField()
    location_id = serializers.UUIDField(allow_null=True)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()

    class Meta:
        ref_name = "AvailabilitySlot"


class AvailabilitySerializer(serializers.Serializer):
    timezone = serializers.CharField()
    duration_minutes = serializers.IntegerField()
    items = SlotSerializer(many=True)

    class Meta:
        ref_name = "Availability"


class WorkingHoursIntervalSerializer(StrictSerializer):
    weekday = serializers.IntegerField(min_value=0, max_value=6, help_text="0 = Monday … 6 = Sunday.")
    start_time = serializers.TimeField(help_text="Practice local time, HH:MM.")
    end_time = serializers.TimeField(help_text="Practice local time, HH:MM; after startTime.")
    location_id = TenantRelatedField(Location, allow_archived=False, required=False, allow_null=True, source="location")

    class Meta:
        ref_name = "WorkingHoursInterval"


class WorkingHoursWriteSerializer(StrictSerializer):
    intervals = WorkingHoursIntervalSerializer(many=True, max_length=50)

    class Meta:
        ref_name = "WorkingHoursWrite"


class WorkingHoursRowSerializer(serializers.Serializer):
    weekday = serializers.IntegerField()
    start_time = ClockTimeField()
    end_time = ClockTimeField()
    location_id = serializers.UUIDField(allow_null=True)

    class Meta:
        ref_name = "WorkingHoursRow"


class WorkingHoursSerializer(serializers.Serializer):
    practitioner_id = serializers.UUIDField()
    timezone = serializers.CharField()
    intervals = WorkingHoursRowSerializer(many=True)

    class Meta:
        ref_name = "WorkingHours"


class SchedulingSettingsSerializer(StrictSerializer):
    timezone = TextField(max_length=64, help_text="IANA timezone name, e.g. Europe/Rome.")

    class Meta:
        ref_name = "SchedulingSettings"
