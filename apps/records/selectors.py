"""Reads of clinical records, and the three sections of the patient record (GET /patient-record/{id}) this app
builds: notes, medicalHistory and alerts (registered in RecordsConfig.ready())."""

import json

from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from apps.core import crypto
from apps.core.wire import datetime_string
from apps.records.models import (
    ClinicalNote,
    FormStatus,
    MedicalAlert,
    MedicalHistory,
    NoteAmendment,
    PatientForm,
    Questionnaire,
    QuestionnaireVersion,
)

RECORD_NOTES = 20  # the newest notes the patient record shows (the rest through /clinical/patients/{id}/notes)


def decrypted(value: str) -> str:
    return crypto.decrypt(value) if value else ""


def notes_of_org(organization) -> QuerySet:
    """The practice's notes with their amendments (oldest first) fetched alongside."""
    return ClinicalNote.objects.for_org(organization).prefetch_related(
        Prefetch("amendments", queryset=NoteAmendment.objects.for_org(organization).order_by("created_at", "id"))
    )


def notes_of(*, organization, patient_id) -> QuerySet:
    return notes_of_org(organization).filter(patient_id=patient_id)


def questionnaires_of(*, organization) -> QuerySet:
    return Questionnaire.objects.for_org(organization).order_by("-is_default", "name", "id")


def versions_of(*, organization, questionnaire) -> QuerySet:
    return QuestionnaireVersion.objects.for_org(organization).filter(questionnaire=questionnaire).order_by("-version")


def version_of(*, organization, questionnaire, version: int) -> QuestionnaireVersion | None:
    return versions_of(organization=organization, questionnaire=questionnaire).filter(version=version).first()


def histories_of(*, organization, patient_id) -> QuerySet:
    return (
        MedicalHistory.objects.for_org(organization)
        .filter(patient_id=patient_id)
        .select_related("questionnaire_version")
    )


def history_answers(entry: MedicalHistory) -> dict:
    return json.loads(decrypted(entry.answers_encrypted) or "{}")


def alerts_of(*, organization, patient_id, include_resolved: bool = False) -> QuerySet:
    alerts = MedicalAlert.objects.for_org(organization).filter(patient_id=patient_id)
    if not include_resolved:
        alerts = alerts.filter(resolved_at__isnull=True)
    return alerts.order_by("-created_at", "-id")


def forms_of(*, organization, patient_id, status: str | None = None) -> QuerySet:
    forms = (
        PatientForm.objects.for_org(organization)
        .filter(patient_id=patient_id)
        .select_related("questionnaire_version")
        .order_by("-created_at", "-id")
    )
    if status == FormStatus.EXPIRED:
        return forms.filter(status=FormStatus.PENDING, expires_at__lte=timezone.now())
    if status == FormStatus.PENDING:
        return forms.filter(status=FormStatus.PENDING, expires_at__gt=timezone.now())
    return forms.filter(status=status) if status else forms


# --- the patient record's sections (JSON-ready; the record is a clinical view, so text is included) ---------------


def _ids(value) -> str | None:
    return str(value) if value is not None else None


def _time(value) -> str | None:
    return datetime_string(value)


def amendment_row(amendment: NoteAmendment) -> dict:
    return {
        "id": str(amendment.id),
        "text": decrypted(amendment.text_encrypted),
        "reason": decrypted(amendment.reason_encrypted),
        "authorId": _ids(amendment.author_id),
        "practitionerId": _ids(amendment.practitioner_id),
        "signedAt": _time(amendment.signed_at),
        "signedById": _ids(amendment.signed_by_id),
        "createdAt": _time(amendment.created_at),
    }


def note_row(note: ClinicalNote) -> dict:
    return {
        "id": str(note.id),
        "patientId": str(note.patient_id),
        "appointmentId": _ids(note.appointment_id),
        "text": decrypted(note.text_encrypted),
        "authorId": _ids(note.author_id),
        "practitionerId": _ids(note.practitioner_id),
        "signedAt": _time(note.signed_at),
        "signedById": _ids(note.signed_by_id),
        "amendments": [amendment_row(amendment) for amendment in note.amendments.all()],
        "createdAt": _time(note.created_at),
    }


def alert_row(alert: MedicalAlert) -> dict:
    return {
        "id": str(alert.id),
        "patientId": str(alert.patient_id),
        "source": alert.source,
        "text": decrypted(alert.text_encrypted),
        "questionKey": alert.question_key or None,
        "medicalHistoryId": _ids(alert.medical_history_id),
        "createdById": _ids(alert.created_by_id),
        "resolvedAt": _time(alert.resolved_at),
        "resolvedById": _ids(alert.resolved_by_id),
        "createdAt": _time(alert.created_at),
    }


def history_row(entry: MedicalHistory) -> dict:
    version = entry.questionnaire_version
    return {
        "id": str(entry.id),
        "patientId": str(entry.patient_id),
        "version": entry.version,
        "questionnaireId": str(version.questionnaire_id),
        "questionnaireVersion": version.version,
        "answers": history_answers(entry),
        "source": entry.source,
        "enteredById": _ids(entry.entered_by_id),
        "createdAt": _time(entry.created_at),
    }


def record_notes(organization, patient_id) -> list[dict]:
    notes = notes_of(organization=organization, patient_id=patient_id).order_by("-created_at", "-id")[:RECORD_NOTES]
    return [note_row(note) for note in notes]


def record_medical_history(organization, patient_id) -> dict | None:
    entry = histories_of(organization=organization, patient_id=patient_id).order_by("-version").first()
    if entry is None:
        return None
    labels = {question["key"]: question["label"] for question in entry.questionnaire_version.questions}
    return history_row(entry) | {"labels": labels}


def record_alerts(organization, patient_id) -> list[dict]:
    return [alert_row(alert) for alert in alerts_of(organization=organization, patient_id=patient_id)]


def questionnaire_row(questionnaire: Questionnaire, version: QuestionnaireVersion) -> dict:
    return {
        "id": str(questionnaire.id),
        "name": questionnaire.name,
        "isDefault": questionnaire.is_default,
        "version": version.version,
        "questions": version.questions,
        "createdAt": _time(questionnaire.created_at),
        "updatedAt": _time(questionnaire.updated_at),
    }


def questionnaire_rows(*, organization) -> list[dict]:
    found = list(questionnaires_of(organization=organization))
    versions = {
        (v.questionnaire_id, v.version): v
        for v in QuestionnaireVersion.objects.for_org(organization).filter(questionnaire__in=found)
    }
    return [questionnaire_row(q, versions[q.id, q.current_version]) for q in found]


def version_row(version: QuestionnaireVersion) -> dict:
    return {
        "questionnaireId": str(version.questionnaire_id),
        "version": version.version,
        "questions": version.questions,
        "createdById": _ids(version.created_by_id),
        "createdAt": _time(version.created_at),
    }


def form_status(form: PatientForm) -> str:
    if form.status == FormStatus.PENDING and form.expires_at <= timezone.now():
        return FormStatus.EXPIRED
    return form.status


def form_row(form: PatientForm) -> dict:
    version = form.questionnaire_version
    return {
        "id": str(form.id),
        "patientId": str(form.patient_id),
        "kind": form.kind,
        "title": form.title,
        "delivery": form.delivery,
        "status": form_status(form),
        "questionnaireId": _ids(version.questionnaire_id) if version else None,
        "questionnaireVersion": version.version if version else None,
        "messageId": _ids(form.message_id),
        "expiresAt": _time(form.expires_at),
        "completedAt": _time(form.completed_at),
        "revokedAt": _time(form.revoked_at),
        "medicalHistoryId": _ids(form.medical_history_id),
        "documentId": _ids(form.document_id),
        "sentById": _ids(form.sent_by_id),
        "createdAt": _time(form.created_at),
    }
