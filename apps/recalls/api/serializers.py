"""Wire shapes of recalls and the waitlist (camelCase on the wire; snake_case here)."""

from rest_framework import serializers

from apps.appointments.public import Appointment
from apps.core.fields import ClockTimeField, StrictBooleanField, TenantRelatedField, TextField
from apps.core.serializers import (
    NonEmptyPatchSerializer,
    OffsetQuerySerializer,
    StrictSerializer,
    offset_page_serializer,
)
from apps.patients.public import Patient, Practitioner
from apps.recalls.models import OfferStatus, RecallStatus, RecallType, ReminderOutcome, WaitlistStatus
from apps.recalls.selectors import appointment_types
from apps.recalls.waitlist import entry_notes

MAX_OFFSETS = 10
MAX_OFFSET_DAYS = 365
MAX_NOTES = 2000


def _patient_name(first: str, last: str) -> str:
    return " ".join(part for part in (first or "", last or "") if part).strip()


# --- recall types -----------------------------------------------------------------------------------------------------


class RecallTypeSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    interval_months = serializers.IntegerField()
    appointment_type = serializers.CharField()
    reminder_offsets = serializers.ListField(
        child=serializers.IntegerField(), help_text="Days relative to the due date (-14: two weeks before)."
    )
    archived = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "RecallType"

    def get_archived(self, recall_type) -> bool:
        return recall_type.archived_at is not None


class RecallTypeListSerializer(serializers.Serializer):
    items = RecallTypeSerializer(many=True)

    class Meta:
        ref_name = "RecallTypeList"


class RecallTypeQuerySerializer(StrictSerializer):
    include_archived = serializers.ChoiceField(
        choices=("true", "false"), default="false", help_text="true: archived types too."
    )


def _offsets_field(**kwargs):
    return serializers.ListField(
        child=serializers.IntegerField(min_value=-MAX_OFFSET_DAYS, max_value=MAX_OFFSET_DAYS),
        max_length=MAX_OFFSETS,
        help_text=f"Reminder days relative to the due date, -{MAX_OFFSET_DAYS} to {MAX_OFFSET_DAYS}, at most "
        f"{MAX_OFFSETS} (e.g. [-14, 0, 14]).",
        **kwargs,
    )


class RecallTypeWriteSerializer(StrictSerializer):
    name = TextField(max_length=80)
    interval_months = serializers.IntegerField(min_value=1, max_value=120)
    appointment_type = serializers.ChoiceField(choices=appointment_types())
    reminder_offsets = _offsets_field(required=False, default=list)

    class Meta:
        ref_name = "RecallTypeWrite"

    def validate_name(self, value: str) -> str:
        value = value.strip()
        if not value:
            raise serializers.ValidationError("must not be blank")
        return value


class RecallTypePatchSerializer(NonEmptyPatchSerializer, RecallTypeWriteSerializer):
    name = TextField(max_length=80, required=False)
    interval_months = serializers.IntegerField(min_value=1, max_value=120, required=False)
    appointment_type = serializers.ChoiceField(choices=appointment_types(), required=False)
    reminder_offsets = _offsets_field(required=False)
    archived = StrictBooleanField(required=False)

    class Meta:
        ref_name = "RecallTypePatch"


# --- recalls ----------------------------------------------------------------------------------------------------------


class ReminderSerializer(serializers.Serializer):
    due_date = serializers.DateField(help_text="The due date the reminder was about.")
    offset_days = serializers.IntegerField()
    outcome = serializers.ChoiceField(choices=ReminderOutcome.choices)
    skipped_reason = serializers.CharField(
        help_text="Why it was not sent (the conversations pipeline's reason, e.g. NO_ADDRESS, CONTACT_BLOCKED, "
        "CONNECTION_UNAVAILABLE; SUPERSEDED when a later offset had come too); empty when sent."
    )
    channel = serializers.CharField()
    message_id = serializers.UUIDField(allow_null=True)
    attempted_at = serializers.DateTimeField(source="created_at")

    class Meta:
        ref_name = "RecallReminder"


class RecallSerializer(serializers.Serializer):
    """Rendered from a selector row (a dict)."""

    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    patient_name = serializers.SerializerMethodField()
    recall_type_id = serializers.UUIDField()
    recall_type_name = serializers.CharField()
    practitioner_id = serializers.UUIDField(allow_null=True)
    due_date = serializers.DateField()
    status = serializers.ChoiceField(choices=RecallStatus.choices)
    appointment_id = serializers.UUIDField(allow_null=True)
    next_reminder_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    cancelled_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Recall"

    def get_patient_name(self, row) -> str:
        return _patient_name(row["patient_first_name"], row["patient_last_name"])


class RecallDetailSerializer(RecallSerializer):
    reminders = ReminderSerializer(many=True)

    class Meta:
        ref_name = "RecallDetail"


RecallPageSerializer = offset_page_serializer(RecallSerializer, "RecallPage")


RECALL_LIST_STATUSES = ("open", *RecallStatus.values, "all")


class RecallQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(
        choices=RECALL_LIST_STATUSES,
        default="open",
        help_text="open (due and booked, the default), one status, or all.",
    )
    due_from = serializers.DateField(required=False, help_text="Due on or after this date.")
    due_to = serializers.DateField(required=False, help_text="Due on or before this date.")
    overdue = serializers.ChoiceField(
        choices=("true", "false"), required=False, help_text="true: due recalls whose date has passed."
    )
    recall_type_id = TenantRelatedField(RecallType, required=False)
    practitioner_id = TenantRelatedField(Practitioner, required=False)

    def validate(self, attrs):
        if attrs.get("due_from") and attrs.get("due_to") and attrs["due_to"] < attrs["due_from"]:
            raise serializers.ValidationError({"dueTo": ["must not be before dueFrom"]})
        return attrs


class PatientRecallQuerySerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=RECALL_LIST_STATUSES, default="all")


class PatientRecallListSerializer(serializers.Serializer):
    items = RecallSerializer(many=True)

    class Meta:
        ref_name = "PatientRecallList"


class RecallSetSerializer(StrictSerializer):
    recall_type_id = TenantRelatedField(RecallType)
    due_date = serializers.DateField()
    practitioner_id = TenantRelatedField(Practitioner, required=False, allow_null=True)

    class Meta:
        ref_name = "RecallSet"


class RecallBookSerializer(StrictSerializer):
    appointment_id = TenantRelatedField(Appointment)

    class Meta:
        ref_name = "RecallBook"


# --- waitlist ---------------------------------------------------------------------------------------------------------


class WaitlistEntrySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    patient_name = serializers.SerializerMethodField()
    appointment_type = serializers.CharField()
    practitioner_id = serializers.UUIDField(allow_null=True)
    preferred_days = serializers.ListField(child=serializers.IntegerField(), help_text="0 = Monday … 6 = Sunday.")
    preferred_from = ClockTimeField(allow_null=True)
    preferred_until = ClockTimeField(allow_null=True)
    earliest_date = serializers.DateField(allow_null=True)
    latest_date = serializers.DateField(allow_null=True)
    appointment_id = serializers.UUIDField(allow_null=True, help_text="The appointment the patient wants earlier.")
    priority = serializers.IntegerField(help_text="1 most urgent … 5.")
    notes = serializers.SerializerMethodField()
    status = serializers.ChoiceField(choices=WaitlistStatus.choices)
    booked_appointment_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "WaitlistEntry"

    def get_patient_name(self, entry) -> str:
        return _patient_name(entry.patient.first_name, entry.patient.last_name)

    def get_notes(self, entry) -> str:
        return entry_notes(entry)


WaitlistPageSerializer = offset_page_serializer(WaitlistEntrySerializer, "WaitlistPage")


class WaitlistQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(
        choices=("open", *WaitlistStatus.values, "all"),
        default="open",
        help_text="open (waiting and offered, the default), one status, or all.",
    )
    appointment_type = serializers.ChoiceField(choices=appointment_types(), required=False)
    practitioner_id = TenantRelatedField(Practitioner, required=False)
    patient_id = TenantRelatedField(Patient, required=False)


class WaitlistEntryPatchSerializer(NonEmptyPatchSerializer):
    appointment_type = serializers.ChoiceField(choices=appointment_types(), required=False)
    practitioner_id = TenantRelatedField(Practitioner, required=False, allow_null=True)
    preferred_days = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=6),
        max_length=7,
        required=False,
        help_text="Weekdays that suit, 0 = Monday … 6 = Sunday; empty: any day.",
    )
    preferred_from = ClockTimeField(required=False, allow_null=True, help_text="HH:MM, practice time.")
    preferred_until = ClockTimeField(required=False, allow_null=True, help_text="HH:MM, practice time.")
    earliest_date = serializers.DateField(required=False, allow_null=True)
    latest_date = serializers.DateField(required=False, allow_null=True)
    appointment_id = TenantRelatedField(
        Appointment, required=False, allow_null=True, help_text="The patient's appointment they want earlier."
    )
    priority = serializers.IntegerField(min_value=1, max_value=5, required=False)
    notes = TextField(max_length=MAX_NOTES, required=False, allow_blank=True, allow_null=True)

    class Meta:
        ref_name = "WaitlistEntryPatch"


class WaitlistEntryCreateSerializer(WaitlistEntryPatchSerializer):
    patient_id = TenantRelatedField(Patient)
    appointment_type = serializers.ChoiceField(choices=appointment_types())
    priority = serializers.IntegerField(min_value=1, max_value=5, required=False, default=3)

    class Meta:
        ref_name = "WaitlistEntryCreate"


class OfferSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    entry_id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    patient_name = serializers.SerializerMethodField()
    practitioner_id = serializers.UUIDField()
    location_id = serializers.UUIDField(allow_null=True)
    appointment_type = serializers.CharField()
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=OfferStatus.choices)
    closed_reason = serializers.CharField()
    message_id = serializers.UUIDField(allow_null=True, help_text="The message that told the patient, when queued.")
    message_skipped_reason = serializers.CharField(help_text="Why no message was queued (e.g. NO_ADDRESS).")
    appointment_id = serializers.UUIDField(allow_null=True, help_text="The appointment booked by accepting.")
    decided_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "WaitlistOffer"

    def get_patient_name(self, offer) -> str:
        return _patient_name(offer.patient.first_name, offer.patient.last_name)


OfferPageSerializer = offset_page_serializer(OfferSerializer, "WaitlistOfferPage")


class OfferQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=(*OfferStatus.values, "all"), default=OfferStatus.OPEN)
