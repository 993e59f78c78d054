"""Wire shapes of the clinical hub (snake_case here; camelCase on the wire)."""

from rest_framework import serializers

from apps.appointments.public import AppointmentStatus, AppointmentType
from apps.clinical.models import Chair, DocumentCategory
from apps.conversations.public import Conversation, Kind
from apps.core.fields import AwareDateTimeField, TenantRelatedField
from apps.core.serializers import NonEmptyPatchSerializer, StrictSerializer
from apps.core.uuids import parse_uuid
from apps.patients.public import Location, Patient, Practitioner

# --- practitioner links ----------------------------------------------------------------------------------------------


class LinkedMemberSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    email = serializers.EmailField()

    class Meta:
        ref_name = "ClinicalLinkedMember"


class PractitionerLinkSerializer(serializers.Serializer):
    practitioner_id = serializers.UUIDField()
    user = LinkedMemberSerializer(allow_null=True, help_text="The linked member account; null when unlinked.")

    class Meta:
        ref_name = "PractitionerUserLink"


class PractitionerLinkWriteSerializer(StrictSerializer):
    user_id = serializers.UUIDField(help_text="A member of this practice (any role).")

    class Meta:
        ref_name = "PractitionerUserLinkWrite"


# --- chairs ----------------------------------------------------------------------------------------------------------


class ChairSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    location_id = serializers.UUIDField()
    location_name = serializers.CharField(source="location.name")
    name = serializers.CharField()
    active = serializers.BooleanField()
    position = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "ClinicalChair"


class ChairListSerializer(serializers.Serializer):
    items = ChairSerializer(many=True)

    class Meta:
        ref_name = "ClinicalChairList"


class ChairCreateSerializer(StrictSerializer):
    location_id = TenantRelatedField(Location, allow_archived=False, source="location")
    name = serializers.CharField(min_length=1, max_length=80)
    active = serializers.BooleanField(required=False, default=True)
    position = serializers.IntegerField(required=False, default=0, min_value=0, max_value=10_000)

    class Meta:
        ref_name = "ClinicalChairCreate"

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("may not be blank")
        return value.strip()


class ChairUpdateSerializer(NonEmptyPatchSerializer):
    location_id = TenantRelatedField(Location, allow_archived=False, source="location", required=False)
    name = serializers.CharField(min_length=1, max_length=80, required=False)
    active = serializers.BooleanField(required=False)
    position = serializers.IntegerField(required=False, min_value=0, max_value=10_000)

    class Meta:
        ref_name = "ClinicalChairUpdate"

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("may not be blank")
        return value.strip()


class ChairListQuerySerializer(StrictSerializer):
    location_id = TenantRelatedField(Location, required=False, source="location")
    include_inactive = serializers.ChoiceField(choices=["true", "false"], required=False)

    class Meta:
        ref_name = "ClinicalChairListQuery"


# --- the day list ----------------------------------------------------------------------------------------------------


class DayListQuerySerializer(StrictSerializer):
    date = serializers.DateField(required=False, help_text="The practice's local date; today when left out.")
    practitioner_id = TenantRelatedField(Practitioner, required=False, source="practitioner")
    location_id = TenantRelatedField(Location, required=False, source="location")

    class Meta:
        ref_name = "DayListQuery"


class NamedSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()

    class Meta:
        ref_name = "ClinicalNamed"


class DayPatientSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()

    class Meta:
        ref_name = "DayListPatient"


class DayAppointmentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    appointment_type = serializers.ChoiceField(choices=AppointmentType.choices)
    status = serializers.ChoiceField(choices=AppointmentStatus.choices)
    patient = DayPatientSerializer()
    location = NamedSerializer(allow_null=True)
    chair = NamedSerializer(allow_null=True)
    arrived_at = serializers.DateTimeField(allow_null=True)
    seated_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    waiting_minutes = serializers.IntegerField(
        allow_null=True,
        help_text="Whole minutes from arrival to seating (or to completion, or to now while still waiting); "
        "null before arrival.",
    )

    class Meta:
        ref_name = "DayListAppointment"


class DayChairGroupSerializer(serializers.Serializer):
    chair = NamedSerializer(allow_null=True, help_text="null: appointments in no chair.")
    appointments = DayAppointmentSerializer(many=True)

    class Meta:
        ref_name = "DayListChairGroup"


class DayPractitionerSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    member = NamedSerializer(allow_null=True, help_text="The linked member account, if any.")

    class Meta:
        ref_name = "DayListPractitioner"


class DayPractitionerGroupSerializer(serializers.Serializer):
    practitioner = DayPractitionerSerializer()
    chairs = DayChairGroupSerializer(many=True)

    class Meta:
        ref_name = "DayListPractitionerGroup"


class DayListSerializer(serializers.Serializer):
    date = serializers.DateField()
    timezone = serializers.CharField()
    practitioners = DayPractitionerGroupSerializer(many=True)
    total = serializers.IntegerField(help_text="Appointments in the list.")

    class Meta:
        ref_name = "DayList"


class ProgressSerializer(StrictSerializer):
    step = serializers.ChoiceField(choices=["arrived", "seated", "completed"])
    chair_id = TenantRelatedField(Chair, required=False, source="chair", help_text="With seated: the chair.")

    class Meta:
        ref_name = "ClinicalAppointmentProgress"


class ChairAssignSerializer(StrictSerializer):
    chair_id = TenantRelatedField(Chair, allow_null=True, source="chair", help_text="null takes it out of any chair.")

    class Meta:
        ref_name = "ClinicalAppointmentChairWrite"


class VisitSerializer(serializers.Serializer):
    appointment_id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=AppointmentStatus.choices)
    chair = NamedSerializer(allow_null=True)
    arrived_at = serializers.DateTimeField(allow_null=True)
    seated_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "ClinicalVisit"


# --- booking ---------------------------------------------------------------------------------------------------------


class BookSerializer(StrictSerializer):
    patient_id = TenantRelatedField(Patient, allow_archived=False, source="patient")
    practitioner_id = TenantRelatedField(Practitioner, allow_archived=False, source="practitioner")
    chair_id = TenantRelatedField(Chair, required=False, allow_null=True, source="chair")
    location_id = TenantRelatedField(Location, allow_archived=False, required=False, allow_null=True, source="location")
    starts_at = AwareDateTimeField()
    ends_at = AwareDateTimeField()
    appointment_type = serializers.ChoiceField(choices=AppointmentType.choices, required=False)
    notes = serializers.CharField(required=False, allow_blank=True, max_length=5000)

    class Meta:
        ref_name = "ClinicalBook"


class BookedSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    practitioner_id = serializers.UUIDField()
    location_id = serializers.UUIDField(allow_null=True)
    chair = NamedSerializer(allow_null=True)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    appointment_type = serializers.ChoiceField(choices=AppointmentType.choices)
    status = serializers.ChoiceField(choices=AppointmentStatus.choices)

    class Meta:
        ref_name = "ClinicalBooked"


# --- documents -------------------------------------------------------------------------------------------------------


class DocumentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    name = serializers.CharField(help_text="The file name given at upload.")
    category = serializers.ChoiceField(choices=DocumentCategory.choices)
    content_type = serializers.CharField()
    size = serializers.IntegerField(help_text="Bytes.")
    sha256 = serializers.CharField()
    uploaded_by_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "ClinicalDocument"


class DocumentListSerializer(serializers.Serializer):
    items = DocumentSerializer(many=True)

    class Meta:
        ref_name = "ClinicalDocumentList"


class DocumentListQuerySerializer(StrictSerializer):
    category = serializers.ChoiceField(choices=DocumentCategory.choices, required=False)

    class Meta:
        ref_name = "ClinicalDocumentListQuery"


class DocumentUploadSerializer(serializers.Serializer):
    """Only for the schema: the upload is read from multipart/form-data by the view."""

    file = serializers.FileField(help_text="JPEG, PNG, WebP, TIFF, PDF or DICOM; at most 20 MiB by default.")
    category = serializers.ChoiceField(choices=DocumentCategory.choices)
    name = serializers.CharField(required=False, help_text="Display name; the file's own name when left out.")

    class Meta:
        ref_name = "ClinicalDocumentUpload"


# --- the patient record ----------------------------------------------------------------------------------------------


class RecordPatientSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField(allow_null=True)
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    preferred_name = serializers.CharField(allow_null=True)
    date_of_birth = serializers.DateField(allow_null=True)
    gender = serializers.CharField(allow_null=True)
    email = serializers.EmailField(allow_null=True)
    phone_mobile = serializers.CharField(allow_null=True)
    phone_other = serializers.CharField(allow_null=True)
    address_line1 = serializers.CharField(allow_null=True)
    address_line2 = serializers.CharField(allow_null=True)
    city = serializers.CharField(allow_null=True)
    province = serializers.CharField(allow_null=True)
    postal_code = serializers.CharField(allow_null=True)
    country = serializers.CharField(allow_null=True)
    language = serializers.CharField(allow_null=True)
    location_id = serializers.UUIDField(allow_null=True)
    status = serializers.CharField()
    archived_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "PatientRecordDemographics"


SECTION_DESCRIPTIONS = {
    "medical_history": "medicalHistory (apps.records): the latest medical history questionnaire answers and when "
    "they were reviewed.",
    "alerts": "alerts (apps.records): medical alerts (allergies, conditions, medications of note) to see first.",
    "notes": "notes (apps.records): clinical notes, newest first, with their signing state.",
    "treatment_plans": "treatmentPlans (apps.plans): treatment plans with their items, statuses and totals.",
    "charting_summary": "chartingSummary (apps.plans): the tooth chart summary (planned and completed work per tooth).",
    "recalls": "recalls (apps.recalls): the patient's recalls (type, due date, status).",
    "waitlist": "waitlist (apps.recalls): the patient's waitlist entries.",
}


class PatientRecordSerializer(serializers.Serializer):
    patient = RecordPatientSerializer()
    documents = DocumentSerializer(many=True, help_text="Clinical documents, newest first.")
    medical_history = serializers.JSONField(required=False, help_text=SECTION_DESCRIPTIONS["medical_history"])
    alerts = serializers.JSONField(required=False, help_text=SECTION_DESCRIPTIONS["alerts"])
    notes = serializers.JSONField(required=False, help_text=SECTION_DESCRIPTIONS["notes"])
    treatment_plans = serializers.JSONField(required=False, help_text=SECTION_DESCRIPTIONS["treatment_plans"])
    charting_summary = serializers.JSONField(required=False, help_text=SECTION_DESCRIPTIONS["charting_summary"])
    recalls = serializers.JSONField(required=False, help_text=SECTION_DESCRIPTIONS["recalls"])
    waitlist = serializers.JSONField(required=False, help_text=SECTION_DESCRIPTIONS["waitlist"])

    class Meta:
        ref_name = "PatientRecord"


# --- the PMS inbox ---------------------------------------------------------------------------------------------------


class PmsInboxQuerySerializer(StrictSerializer):
    channel = serializers.ChoiceField(choices=Kind.choices, required=False)
    status = serializers.ChoiceField(choices=Conversation.State.choices, required=False)
    patient_id = TenantRelatedField(Patient, required=False, source="patient")
    assignee = serializers.CharField(required=False, help_text="A member's user id, or none.")
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100)

    class Meta:
        ref_name = "PmsInboxQuery"

    def validate_assignee(self, value):
        if value == "none":
            return value
        parsed = parse_uuid(value)
        if parsed is None:
            raise serializers.ValidationError("must be a member's user id or none")
        return parsed


class PmsConversationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient = DayPatientSerializer()
    channel = serializers.ChoiceField(choices=Kind.choices)
    status = serializers.ChoiceField(choices=Conversation.State.choices)
    snoozed_until = serializers.DateTimeField(allow_null=True)
    assignee_id = serializers.UUIDField(allow_null=True)
    last_message_at = serializers.DateTimeField()
    last_inbound_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "PmsInboxConversation"


class PmsConversationPageSerializer(serializers.Serializer):
    items = PmsConversationSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "PmsInboxConversationPage"
