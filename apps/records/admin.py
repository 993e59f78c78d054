"""The back office for clinical records: read-mostly, and no clinical text anywhere (it is stored encrypted and
left out of every page)."""

from django.contrib import admin

from apps.records.models import (
    ClinicalNote,
    MedicalAlert,
    MedicalHistory,
    NoteAmendment,
    PatientForm,
    Questionnaire,
    QuestionnaireVersion,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ClinicalNote)
class ClinicalNoteAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "patient_id", "author", "signed_at", "created_at")
    list_filter = (("signed_at", admin.EmptyFieldListFilter),)
    exclude = ("text_encrypted",)


@admin.register(NoteAmendment)
class NoteAmendmentAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "note_id", "author", "signed_at", "created_at")
    exclude = ("text_encrypted", "reason_encrypted")


@admin.register(Questionnaire)
class QuestionnaireAdmin(ReadOnlyAdmin):
    list_display = ("name", "organization", "is_default", "current_version", "updated_at")
    list_filter = ("is_default",)


@admin.register(QuestionnaireVersion)
class QuestionnaireVersionAdmin(ReadOnlyAdmin):
    list_display = ("questionnaire", "organization", "version", "created_at")


@admin.register(MedicalHistory)
class MedicalHistoryAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "patient_id", "version", "source", "created_at")
    list_filter = ("source",)
    exclude = ("answers_encrypted",)


@admin.register(MedicalAlert)
class MedicalAlertAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "patient_id", "source", "resolved_at", "created_at")
    list_filter = ("source",)
    exclude = ("text_encrypted",)


@admin.register(PatientForm)
class PatientFormAdmin(ReadOnlyAdmin):
    list_display = ("id", "organization", "patient_id", "kind", "delivery", "status", "expires_at", "created_at")
    list_filter = ("kind", "delivery", "status")
    exclude = ("token_hash", "consent_text_encrypted")
