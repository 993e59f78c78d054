"""Wire shapes of clinical records (camelCase on the wire; snake_case here). Responses are built by the row
functions of apps.records.selectors; the output serializers below describe them in the OpenAPI schema."""

from djangorestframework_camel_case.util import camelize
from rest_framework import serializers

from apps.appointments.public import Appointment
from apps.core.fields import StrictBooleanField, TenantRelatedField, TextField
from apps.core.serializers import StrictSerializer
from apps.records.models import FormDelivery, FormKind, FormStatus, Questionnaire
from apps.records.services import DEFAULT_FORM_HOURS, MAX_FORM_HOURS

MAX_NOTE = 20_000
MAX_REASON = 2_000
MAX_ALERT = 500
MAX_CONSENT = 20_000


class CursorQuerySerializer(StrictSerializer):
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100)

    class Meta:
        ref_name = "ClinicalRecordsCursorQuery"


class CamelizedDictField(serializers.DictField):
    """A JSON object whose keys are wire names (question keys): the parser's snake_case is turned back."""

    def to_internal_value(self, data):
        return dict(camelize(super().to_internal_value(data)))


# --- notes ------------------------------------------------------------------------------------------------------------


class NoteCreateSerializer(StrictSerializer):
    text = TextField(max_length=MAX_NOTE, help_text="The note (stored encrypted; never in events or logs).")
    appointment_id = TenantRelatedField(
        Appointment, required=False, allow_null=True, help_text="An appointment of this patient the note is about."
    )

    class Meta:
        ref_name = "ClinicalNoteCreate"


class AmendmentCreateSerializer(StrictSerializer):
    text = TextField(max_length=MAX_NOTE, help_text="The corrected or added text.")
    reason = TextField(max_length=MAX_REASON, help_text="Why the note is amended.")

    class Meta:
        ref_name = "ClinicalNoteAmendmentCreate"


class AmendmentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    text = serializers.CharField()
    reason = serializers.CharField()
    author_id = serializers.UUIDField(allow_null=True)
    practitioner_id = serializers.UUIDField(allow_null=True)
    signed_at = serializers.DateTimeField(allow_null=True)
    signed_by_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "ClinicalNoteAmendment"


class NoteSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    appointment_id = serializers.UUIDField(allow_null=True)
    text = serializers.CharField()
    author_id = serializers.UUIDField(allow_null=True, help_text="The member who wrote it.")
    practitioner_id = serializers.UUIDField(
        allow_null=True, help_text="The clinician: the practitioner the author is linked to (null when unlinked)."
    )
    signed_at = serializers.DateTimeField(allow_null=True, help_text="Set once signed: the note is sealed.")
    signed_by_id = serializers.UUIDField(allow_null=True)
    amendments = AmendmentSerializer(many=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "ClinicalNote"


class NotePageSerializer(serializers.Serializer):
    items = NoteSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "ClinicalNotePage"


# --- questionnaires ---------------------------------------------------------------------------------------------------


class QuestionSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="camelCase, unique in the questionnaire: the answer's key.")
    label = serializers.CharField()
    type = serializers.ChoiceField(choices=["boolean", "text", "choice", "multi_choice", "date", "number"])
    required = serializers.BooleanField()
    choices = serializers.ListField(child=serializers.CharField())
    alert = serializers.BooleanField(help_text="Whether an answer raises a medical alert.")
    alert_when = serializers.ListField(child=serializers.CharField(), help_text="Choices that raise the alert.")
    alert_label = serializers.CharField(allow_blank=True)
    help = serializers.CharField(allow_blank=True)

    class Meta:
        ref_name = "MedicalHistoryQuestion"


class QuestionnaireSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    is_default = serializers.BooleanField()
    version = serializers.IntegerField(help_text="The current version (the one new answers and forms use).")
    questions = QuestionSerializer(many=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "MedicalHistoryQuestionnaire"


class QuestionnaireListSerializer(serializers.Serializer):
    items = QuestionnaireSerializer(many=True)

    class Meta:
        ref_name = "MedicalHistoryQuestionnaireList"


class QuestionnaireVersionSerializer(serializers.Serializer):
    questionnaire_id = serializers.UUIDField()
    version = serializers.IntegerField()
    questions = QuestionSerializer(many=True)
    created_by_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "MedicalHistoryQuestionnaireVersion"


class QuestionsField(serializers.ListField):
    """The questions as sent; their field names come back to camelCase (checked by apps.records.questions)."""

    def __init__(self, **kwargs):
        super().__init__(child=serializers.DictField(), min_length=1, max_length=200, **kwargs)

    def to_internal_value(self, data):
        return camelize(super().to_internal_value(data))


class QuestionnaireCreateSerializer(StrictSerializer):
    name = TextField(max_length=200)
    questions = QuestionsField(help_text="The questions of version 1 (see MedicalHistoryQuestion).")

    class Meta:
        ref_name = "MedicalHistoryQuestionnaireCreate"


class QuestionnairePublishSerializer(StrictSerializer):
    name = TextField(max_length=200, required=False)
    questions = QuestionsField(help_text="The questions of the new version (the whole list).")

    class Meta:
        ref_name = "MedicalHistoryQuestionnairePublish"


# --- medical history --------------------------------------------------------------------------------------------------


class HistoryCreateSerializer(StrictSerializer):
    questionnaire_id = TenantRelatedField(
        Questionnaire, required=False, help_text="Default: the practice's default questionnaire (its current version)."
    )
    answers = CamelizedDictField(help_text="Answers by question key.")

    class Meta:
        ref_name = "MedicalHistoryCreate"


class HistorySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    version = serializers.IntegerField(help_text="1, 2, … per patient.")
    questionnaire_id = serializers.UUIDField()
    questionnaire_version = serializers.IntegerField()
    answers = serializers.DictField(help_text="Answers by question key.")
    source = serializers.ChoiceField(choices=["staff", "patient"], help_text="patient: from a patient form.")
    entered_by_id = serializers.UUIDField(allow_null=True, help_text="The member; null when from a patient form.")
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "MedicalHistory"


class HistoryPageSerializer(serializers.Serializer):
    items = HistorySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "MedicalHistoryPage"


# --- alerts -----------------------------------------------------------------------------------------------------------


class AlertCreateSerializer(StrictSerializer):
    text = TextField(max_length=MAX_ALERT, help_text="What the alert says (e.g. 'Latex allergy').")

    class Meta:
        ref_name = "MedicalAlertCreate"


class AlertQuerySerializer(StrictSerializer):
    include_resolved = serializers.ChoiceField(choices=["true", "false"], required=False, default="false")

    class Meta:
        ref_name = "MedicalAlertQuery"


class AlertSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    source = serializers.ChoiceField(choices=["medical_history", "manual"])
    text = serializers.CharField()
    question_key = serializers.CharField(allow_null=True)
    medical_history_id = serializers.UUIDField(allow_null=True)
    created_by_id = serializers.UUIDField(allow_null=True)
    resolved_at = serializers.DateTimeField(allow_null=True)
    resolved_by_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "MedicalAlert"


class AlertListSerializer(serializers.Serializer):
    items = AlertSerializer(many=True)

    class Meta:
        ref_name = "MedicalAlertList"


# --- patient forms ----------------------------------------------------------------------------------------------------


class FormSendSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=FormKind.choices)
    delivery = serializers.ChoiceField(
        choices=FormDelivery.choices, help_text="email or sms: sent to the patient; link: shown by the front desk."
    )
    questionnaire_id = TenantRelatedField(
        Questionnaire, required=False, help_text="medical_history: default the practice's default questionnaire."
    )
    title = TextField(max_length=200, required=False)
    consent_text = TextField(max_length=MAX_CONSENT, required=False, help_text="consent: the wording to agree to.")
    expires_in_hours = serializers.IntegerField(min_value=1, max_value=MAX_FORM_HOURS, default=DEFAULT_FORM_HOURS)

    class Meta:
        ref_name = "PatientFormSend"


class FormQuerySerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=FormStatus.choices, required=False)

    class Meta:
        ref_name = "PatientFormQuery"


class FormSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=FormKind.choices)
    title = serializers.CharField()
    delivery = serializers.ChoiceField(choices=FormDelivery.choices)
    status = serializers.ChoiceField(choices=FormStatus.choices)
    questionnaire_id = serializers.UUIDField(allow_null=True)
    questionnaire_version = serializers.IntegerField(allow_null=True)
    message_id = serializers.UUIDField(allow_null=True, help_text="The conversations message that carried the link.")
    expires_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    medical_history_id = serializers.UUIDField(allow_null=True)
    document_id = serializers.UUIDField(allow_null=True, help_text="The filled form (PDF) in clinical storage.")
    sent_by_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "PatientForm"


class FormSentSerializer(FormSerializer):
    url = serializers.CharField(help_text="The single-use link (only in this answer; never stored or shown again).")

    class Meta:
        ref_name = "PatientFormSent"


class FormListSerializer(serializers.Serializer):
    items = FormSerializer(many=True)

    class Meta:
        ref_name = "PatientFormList"


class PublicFormSerializer(serializers.Serializer):
    practice_name = serializers.CharField()
    kind = serializers.ChoiceField(choices=FormKind.choices)
    title = serializers.CharField()
    questions = QuestionSerializer(many=True, help_text="medical_history: the questions; consent: empty.")
    consent_text = serializers.CharField(allow_blank=True)
    expires_at = serializers.DateTimeField()

    class Meta:
        ref_name = "PublicPatientForm"


class PublicSubmitSerializer(StrictSerializer):
    answers = CamelizedDictField(required=False, help_text="medical_history: answers by question key.")
    agree = StrictBooleanField(required=False, help_text="consent: must be true.")
    signature_name = TextField(max_length=200, required=False, help_text="consent: the patient's full name.")

    class Meta:
        ref_name = "PublicPatientFormSubmit"


class PublicSubmittedSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["completed"])

    class Meta:
        ref_name = "PublicPatientFormSubmitted"
