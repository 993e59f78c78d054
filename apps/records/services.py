"""Writes of clinical records: notes, amendments and signing; questionnaires and their versions; medical history
versions and the alerts they raise; manual alerts; patient forms (sending, revoking, the patient's submission).

Clinical content (note text, reasons, answers, alert text) is encrypted before it is stored and is never logged or put
in an event: the event catalogue has no clinical-record events, so these services emit none; logs name ids only.
"""

import json
import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.clinical.public import document_store, practitioner_of_user
from apps.conversations.public import CONNECTION_UNAVAILABLE, Kind, OutboundMessage, connections_of, queue_messages
from apps.core import crypto
from apps.core.errors import ValidationFailed
from apps.patients.public import Patient, PatientMerged
from apps.records import pdf, questions, tokens
from apps.records.errors import (
    FormClosed,
    FormNotFound,
    FormNotSent,
    NoteAlreadySigned,
    NoteSignNotAllowed,
    QuestionnaireInvalid,
)
from apps.records.models import (
    AlertSource,
    ClinicalNote,
    EntrySource,
    FormDelivery,
    FormKind,
    FormStatus,
    MedicalAlert,
    MedicalHistory,
    NoteAmendment,
    PatientForm,
    Questionnaire,
    QuestionnaireVersion,
)

logger = logging.getLogger("apps.records")

FORM_SOURCE = "patient_form"  # Message.source of a form link sent to a patient
DELIVERY_KINDS = {FormDelivery.SMS: (Kind.SMS, Kind.TELEPHONY_MESSAGING), FormDelivery.EMAIL: (Kind.EMAIL,)}
DEFAULT_FORM_HOURS = 72
MAX_FORM_HOURS = 30 * 24


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None


def _live_patient(patient: Patient) -> Patient:
    if patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)
    return patient


# --- notes ------------------------------------------------------------------------------------------------------------


@transaction.atomic
def note_create(*, organization, actor, patient: Patient, text: str, appointment=None) -> ClinicalNote:
    """A note by the member; the clinician is the practitioner the member is linked to (none when unlinked)."""
    _live_patient(patient)
    if appointment is not None and appointment.patient_id != patient.id:
        raise ValidationFailed.for_field("appointmentId", "is not an appointment of this patient")
    note = ClinicalNote.objects.create(
        organization=organization,
        patient=patient,
        appointment=appointment,
        author=actor,
        practitioner=practitioner_of_user(organization, actor),
        text_encrypted=crypto.encrypt(text),
    )
    logger.info("clinical note %s written for patient %s", note.id, patient.id)
    return note


@transaction.atomic
def amendment_create(*, organization, actor, note: ClinicalNote, text: str, reason: str) -> NoteAmendment:
    """A correction appended to the note (signed or not); the note's own text never changes."""
    amendment = NoteAmendment.objects.create(
        organization=organization,
        note=note,
        author=actor,
        practitioner=practitioner_of_user(organization, actor),
        text_encrypted=crypto.encrypt(text),
        reason_encrypted=crypto.encrypt(reason),
    )
    logger.info("clinical note %s amended (%s)", note.id, amendment.id)
    return amendment


def _sign(model, record, *, organization, actor):
    """Seal a note or amendment: only its author, linked to a practitioner; once (a conditional update)."""
    if record.signed_at is not None:
        raise NoteAlreadySigned()
    practitioner = practitioner_of_user(organization, actor)
    if record.author_id != actor.pk or practitioner is None:
        raise NoteSignNotAllowed()
    now = timezone.now()
    fields = {"signed_at": now, "signed_by": actor, "updated_at": now}
    if record.practitioner_id is None:
        fields["practitioner"] = practitioner
    if not model.objects.for_org(organization).filter(id=record.id, signed_at__isnull=True).update(**fields):
        raise NoteAlreadySigned()
    record.refresh_from_db()
    logger.info("%s %s signed", model._meta.model_name, record.id)
    return record


@transaction.atomic
def note_sign(*, organization, actor, note: ClinicalNote) -> ClinicalNote:
    return _sign(ClinicalNote, note, organization=organization, actor=actor)


@transaction.atomic
def amendment_sign(*, organization, actor, amendment: NoteAmendment) -> NoteAmendment:
    return _sign(NoteAmendment, amendment, organization=organization, actor=actor)


# --- questionnaires ---------------------------------------------------------------------------------------------------


def _checked(raw) -> list[dict]:
    try:
        return questions.check_questions(raw)
    except ValueError as exc:
        raise QuestionnaireInvalid(str(exc)) from None


def questionnaire_default(*, organization) -> Questionnaire:
    """The practice's default medical history questionnaire, created (version 1, the default questions) on first use."""
    found = Questionnaire.objects.for_org(organization).filter(is_default=True).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            questionnaire = Questionnaire.objects.create(
                organization=organization, name=questions.DEFAULT_NAME, is_default=True
            )
            QuestionnaireVersion.objects.create(
                organization=organization,
                questionnaire=questionnaire,
                version=1,
                questions=questions.default_questions(),
            )
            return questionnaire
    except IntegrityError:  # another request created it first
        return Questionnaire.objects.for_org(organization).get(is_default=True)


@transaction.atomic
def questionnaire_create(*, organization, actor, name: str, questions_data) -> Questionnaire:
    questionnaire_default(organization=organization)  # the default one exists before any other
    checked = _checked(questions_data)
    questionnaire = Questionnaire.objects.create(organization=organization, name=name)
    QuestionnaireVersion.objects.create(
        organization=organization, questionnaire=questionnaire, version=1, questions=checked, created_by=_user(actor)
    )
    return questionnaire


@transaction.atomic
def questionnaire_publish(*, organization, actor, questionnaire: Questionnaire, questions_data, name=None):
    """A new version with these questions (the earlier versions stay, for the answers given to them)."""
    checked = _checked(questions_data)
    locked = Questionnaire.objects.for_org(organization).select_for_update().get(id=questionnaire.id)
    locked.current_version += 1
    if name:
        locked.name = name
    locked.save(update_fields=["current_version", "name", "updated_at"])
    QuestionnaireVersion.objects.create(
        organization=organization,
        questionnaire=locked,
        version=locked.current_version,
        questions=checked,
        created_by=_user(actor),
    )
    return locked


def current_version(questionnaire: Questionnaire) -> QuestionnaireVersion:
    return QuestionnaireVersion.objects.for_org(questionnaire.organization_id).get(
        questionnaire=questionnaire, version=questionnaire.current_version
    )


# --- medical history and alerts ---------------------------------------------------------------------------------------


@transaction.atomic
def history_submit(
    *, organization, actor, patient: Patient, version: QuestionnaireVersion, answers, source=EntrySource.STAFF
) -> MedicalHistory:
    """A new version of the patient's medical history, its answers checked against the questionnaire version (400
    naming answers.<key>). The alerts derived from the previous version are resolved and derived again."""
    _live_patient(patient)
    kept, problems = questions.check_answers(version.questions, answers)
    if problems:
        fields = {f"answers.{key}" if key != "answers" else key: value for key, value in problems.items()}
        first = next(iter(fields))
        raise ValidationFailed(f"{first}: {fields[first][0]}", details={"fields": fields})
    Patient.objects.for_org(organization).select_for_update().filter(id=patient.id).first()  # versions in order
    last = MedicalHistory.objects.for_org(organization).filter(patient=patient).order_by("-version").first()
    entry = MedicalHistory.objects.create(
        organization=organization,
        patient=patient,
        version=(last.version if last else 0) + 1,
        questionnaire_version=version,
        answers_encrypted=crypto.encrypt(json.dumps(kept)),
        source=source,
        entered_by=_user(actor),
    )
    now = timezone.now()
    MedicalAlert.objects.for_org(organization).filter(
        patient=patient, source=AlertSource.MEDICAL_HISTORY, resolved_at__isnull=True
    ).update(resolved_at=now, updated_at=now)
    MedicalAlert.objects.bulk_create(
        [
            MedicalAlert(
                organization=organization,
                patient=patient,
                source=AlertSource.MEDICAL_HISTORY,
                question_key=key,
                text_encrypted=crypto.encrypt(text),
                medical_history=entry,
                created_by=_user(actor),
            )
            for key, text in questions.alerts_of(version.questions, kept)
        ]
    )
    logger.info("medical history v%s of patient %s (%s)", entry.version, patient.id, source)
    return entry


@transaction.atomic
def alert_create(*, organization, actor, patient: Patient, text: str) -> MedicalAlert:
    _live_patient(patient)
    return MedicalAlert.objects.create(
        organization=organization,
        patient=patient,
        source=AlertSource.MANUAL,
        text_encrypted=crypto.encrypt(text),
        created_by=_user(actor),
    )


@transaction.atomic
def alert_resolve(*, organization, actor, alert: MedicalAlert) -> MedicalAlert:
    """Resolving a resolved alert changes nothing (idempotent)."""
    now = timezone.now()
    MedicalAlert.objects.for_org(organization).filter(id=alert.id, resolved_at__isnull=True).update(
        resolved_at=now, resolved_by=_user(actor), updated_at=now
    )
    alert.refresh_from_db()
    return alert


# --- patient forms ----------------------------------------------------------------------------------------------------


def form_url(token: str) -> str:
    return f"{settings.SVC_BASE_URL}/patient-form/{token}"


def _connection_id(organization, delivery: str):
    for kind in DELIVERY_KINDS[delivery]:
        connection = connections_of(organization=organization, kind=kind).exclude(status="disconnected").first()
        if connection is not None:
            return connection.id
    return None


def _message(organization, patient: Patient, delivery: str, title: str, url: str, expires_at) -> OutboundMessage:
    practice = organization.name
    greeting = f"Hi {patient.first_name}, " if (patient.first_name or "").strip() else ""
    if delivery == FormDelivery.SMS:
        body = f"{greeting}{practice} asks you to fill in a form before your visit: {url}"
        return OutboundMessage(patient_id=patient.id, body=body, reference="patient_form")
    body = (
        f"{greeting.strip() or 'Hello,'}\n\n{practice} asks you to fill in this form ({title}) before your visit:"
        f"\n\n{url}\n\nThe link works once, until {expires_at:%d %B %Y %H:%M} UTC."
    )
    return OutboundMessage(patient_id=patient.id, body=body, subject=f"{title} - {practice}", reference="patient_form")


@transaction.atomic
def form_send(
    *,
    organization,
    actor,
    patient: Patient,
    kind: str,
    delivery: str,
    questionnaire: Questionnaire | None = None,
    title: str = "",
    consent_text: str = "",
    expires_in_hours: int = DEFAULT_FORM_HOURS,
) -> tuple[PatientForm, str]:
    """A form and its single-use token (returned once). By e-mail or SMS the link goes through the conversations
    pipeline (a service message: the channel's block and address rules apply, marketing consent does not); a
    message the pipeline skips is 409 FORM_NOT_SENT with the reason and nothing is kept. `link` sends nothing: the
    front desk shows the URL."""
    _live_patient(patient)
    version = None
    if kind == FormKind.MEDICAL_HISTORY:
        questionnaire = questionnaire or questionnaire_default(organization=organization)
        version = current_version(questionnaire)
        title = title or questionnaire.name
    elif not consent_text.strip():
        raise ValidationFailed.for_field("consentText", "is required for a consent form")
    title = title or "Consent"
    token = tokens.new_token()
    expires_at = timezone.now() + timedelta(hours=expires_in_hours)
    message_id = None
    if delivery != FormDelivery.LINK:
        connection_id = _connection_id(organization, delivery)
        if connection_id is None:
            raise FormNotSent(CONNECTION_UNAVAILABLE)
        (result,) = queue_messages(
            organization=organization,
            connection_id=connection_id,
            messages=[_message(organization, patient, delivery, title, form_url(token), expires_at)],
            purpose="service",
            source=FORM_SOURCE,
            user=_user(actor),
        )
        if result.message_id is None:
            raise FormNotSent(result.skipped_reason)
        message_id = result.message_id
    form = PatientForm.objects.create(
        organization=organization,
        patient=patient,
        kind=kind,
        questionnaire_version=version,
        title=title,
        consent_text_encrypted=crypto.encrypt(consent_text) if consent_text else "",
        delivery=delivery,
        message_id=message_id,
        token_hash=tokens.digest(token),
        expires_at=expires_at,
        sent_by=_user(actor),
    )
    logger.info("patient form %s (%s) for patient %s by %s", form.id, kind, patient.id, delivery)
    return form, token


@transaction.atomic
def form_revoke(*, organization, actor, form: PatientForm) -> PatientForm:
    """A pending form's link stops at once; a completed one is 409 FORM_CLOSED; revoking again changes nothing."""
    if form.status == FormStatus.REVOKED:
        return form
    now = timezone.now()
    moved = (
        PatientForm.objects.for_org(organization)
        .filter(id=form.id, status=FormStatus.PENDING)
        .update(status=FormStatus.REVOKED, revoked_at=now, updated_at=now)
    )
    if not moved:
        raise FormClosed()
    form.refresh_from_db()
    return form


def form_for_token(token: str) -> PatientForm | None:
    """The pending, unexpired form a token opens; anything else (unknown, used, revoked, expired) is None."""
    digest = tokens.digest(token)
    if digest is None:
        return None
    return (
        PatientForm.objects.unscoped()
        .select_related("organization", "patient", "questionnaire_version")
        .filter(token_hash=digest, status=FormStatus.PENDING, expires_at__gt=timezone.now())
        .first()
    )


def _answer_text(question: dict, value) -> str:
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, list):
        return ", ".join(value)
    return str(value)


def _document_lines(form: PatientForm, *, answers: dict | None, signature_name: str, consent_text: str) -> list[str]:
    lines = [
        f"Practice: {form.organization.name}",
        f"Patient: {form.patient.first_name} {form.patient.last_name}".rstrip(),
        f"Completed: {timezone.now():%Y-%m-%d %H:%M} UTC",
        "",
    ]
    if form.kind == FormKind.MEDICAL_HISTORY:
        for question in form.questionnaire_version.questions:
            value = answers.get(question["key"]) if answers else None
            lines += [question["label"], f"    {_answer_text(question, value) if value is not None else '—'}"]
    else:
        lines += [*consent_text.splitlines(), "", f"Agreed and signed by: {signature_name}"]
    return lines


@transaction.atomic
def form_submit(
    *, form: PatientForm, answers: dict | None = None, agree: bool = False, signature_name: str = ""
) -> PatientForm:
    """The patient's submission: the token is spent (a conditional update: of two racing submissions one wins, the
    other is 404), a medical history version is kept (source patient) for a questionnaire, and the filled form is
    stored as a PDF in the patient's clinical documents (category form or consent)."""
    organization = form.organization
    consent_text = crypto.decrypt(form.consent_text_encrypted) if form.consent_text_encrypted else ""
    if form.kind == FormKind.CONSENT:
        if agree is not True:
            raise ValidationFailed.for_field("agree", "must be true to give consent")
        if not signature_name.strip():
            raise ValidationFailed.for_field("signatureName", "is required: type your full name")
    now = timezone.now()
    spent = (
        PatientForm.objects.for_org(organization)
        .filter(id=form.id, status=FormStatus.PENDING, expires_at__gt=now)
        .update(status=FormStatus.COMPLETED, completed_at=now, updated_at=now)
    )
    if not spent:
        raise FormNotFound()
    entry = None
    kept = None
    if form.kind == FormKind.MEDICAL_HISTORY:
        entry = history_submit(
            organization=organization,
            actor=None,
            patient=form.patient,
            version=form.questionnaire_version,
            answers=answers or {},
            source=EntrySource.PATIENT,
        )
        kept = json.loads(crypto.decrypt(entry.answers_encrypted))
    content = pdf.render_pdf(
        form.title,
        _document_lines(form, answers=kept, signature_name=signature_name.strip(), consent_text=consent_text),
    )
    document = document_store(
        organization=organization,
        patient_id=form.patient_id,
        user=None,
        name=f"{form.title} {now:%Y-%m-%d}.pdf",
        content_type="application/pdf",
        content=content,
        category="form" if form.kind == FormKind.MEDICAL_HISTORY else "consent",
    )
    PatientForm.objects.for_org(organization).filter(id=form.id).update(medical_history=entry, document_id=document.id)
    form.refresh_from_db()
    logger.info("patient form %s completed", form.id)
    return form
