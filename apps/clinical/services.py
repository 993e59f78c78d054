"""Writes of the clinical workspace hub: practitioner links, chairs and the chair of an appointment, booking from
the clinical diary, and clinical documents.

Events: the catalogue has none for these records, so they emit none of their own (a booking emits the appointments
app's own events through its service). Clinical content never goes into a log line: documents are logged by their
storage name only."""

import uuid
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.appointments.public import (
    Appointment,
    AppointmentStatus,
    AppointmentTransitionNotAllowed,
    appointment_create,
    appointment_set_status,
)
from apps.clinical import documents, selectors
from apps.clinical.errors import (
    ChairInactive,
    ChairInUse,
    ChairLocationMismatch,
    ChairNameTaken,
    DocumentTypeRefused,
    MemberAlreadyLinked,
    PractitionerAlreadyLinked,
    PractitionerNotLinked,
)
from apps.clinical.models import AppointmentVisit, Chair, ClinicalDocument, DocumentCategory, PractitionerLink
from apps.core import crypto
from apps.core.errors import NotFound
from apps.patients.public import Patient

# --- practitioner links ----------------------------------------------------------------------------------------------


def practitioner_link(*, organization, actor, practitioner, user) -> PractitionerLink:
    """Tie the practitioner profile to the member account (a member of this practice: the caller checks it).
    Linking the same pair again is harmless; either side already linked elsewhere is 409."""
    with transaction.atomic():
        existing = selectors.link_of_practitioner(organization=organization, practitioner_id=practitioner.pk)
        if existing is not None:
            if existing.user_id == user.pk:
                return existing
            raise PractitionerAlreadyLinked(details={"userId": str(existing.user_id)})
        if PractitionerLink.objects.for_org(organization).filter(user_id=user.pk).exists():
            raise MemberAlreadyLinked()
        try:
            with transaction.atomic():
                link = PractitionerLink.objects.create(organization=organization, practitioner=practitioner, user=user)
        except IntegrityError as exc:  # a concurrent link of either side won
            if "clinical_link_user_unique" in str(exc):
                raise MemberAlreadyLinked() from None
            raise PractitionerAlreadyLinked() from None
    link.user = user
    return link


def practitioner_unlink(*, organization, actor, practitioner) -> None:
    deleted, _ = PractitionerLink.objects.for_org(organization).filter(practitioner_id=practitioner.pk).delete()
    if not deleted:
        raise PractitionerNotLinked()


# --- chairs ----------------------------------------------------------------------------------------------------------

CHAIR_FIELDS = ("location", "name", "active", "position")


def _save_chair(chair: Chair, *, force_insert: bool = False) -> Chair:
    try:
        with transaction.atomic():
            chair.save(force_insert=force_insert)
    except IntegrityError as exc:
        if "clinical_chair_location_name_ci_unique" in str(exc):
            raise ChairNameTaken() from None
        raise
    return chair


def chair_create(*, organization, actor, data: dict[str, Any]) -> Chair:
    chair = Chair(organization=organization, **{key: data[key] for key in CHAIR_FIELDS if key in data})
    return _save_chair(chair, force_insert=True)


def chair_update(*, organization, actor, chair: Chair, data: dict[str, Any]) -> Chair:
    with transaction.atomic():
        chair = Chair.objects.for_org(organization).select_for_update().get(id=chair.id)
        for key in CHAIR_FIELDS:
            if key in data:
                setattr(chair, key, data[key])
        return _save_chair(chair)


def chair_delete(*, organization, actor, chair: Chair) -> None:
    """Delete a chair no upcoming appointment sits in (409 CHAIR_IN_USE otherwise); its past visits stay,
    chairless."""
    with transaction.atomic():
        chair = Chair.objects.for_org(organization).select_for_update().get(id=chair.id)
        if selectors.chair_has_upcoming(organization=organization, chair=chair):
            raise ChairInUse()
        chair.delete()


# --- the day: chairs of appointments, arrival, seating, completion ---------------------------------------------------


def _check_chair(chair: Chair | None, location_id) -> None:
    if chair is None:
        return
    if not chair.active:
        raise ChairInactive()
    if location_id is not None and chair.location_id != location_id:
        raise ChairLocationMismatch()


def _locked_appointment(*, organization, appointment_id) -> Appointment:
    appointment = (
        Appointment.objects.for_org(organization).select_for_update(of=("self",)).filter(id=appointment_id).first()
    )
    if appointment is None:
        raise NotFound("No such appointment.")
    return appointment


def _visit(*, organization, appointment) -> AppointmentVisit:
    visit = AppointmentVisit.objects.for_org(organization).filter(appointment_id=appointment.id).first()
    return visit or AppointmentVisit(organization=organization, appointment=appointment)


def appointment_chair_set(*, organization, actor, appointment_id, chair: Chair | None):
    """Put the appointment in a chair of its location (an active one), or take it out of any (None)."""
    with transaction.atomic():
        appointment = _locked_appointment(organization=organization, appointment_id=appointment_id)
        _check_chair(chair, appointment.location_id)
        visit = _visit(organization=organization, appointment=appointment)
        visit.chair = chair
        visit.save()
    return appointment, visit


def appointment_progress(*, organization, actor, appointment_id, step: str, chair: Chair | None = None):
    """Move a patient along the day: `arrived` (the appointment becomes arrived; the arrival time is kept),
    `seated` (in the chair, if given; an appointment not marked arrived yet arrives now too) or `completed`
    (the appointment becomes completed). Status changes go through the appointments app (its events and
    timeline); a status that does not allow the step is 409 APPOINTMENT_TRANSITION_NOT_ALLOWED. Repeating a step
    keeps its first time."""
    now = timezone.now()
    with transaction.atomic():
        appointment = _locked_appointment(organization=organization, appointment_id=appointment_id)
        visit = _visit(organization=organization, appointment=appointment)
        if step in ("arrived", "seated") and appointment.status != AppointmentStatus.ARRIVED:
            if step == "seated" and appointment.status == AppointmentStatus.COMPLETED:
                raise AppointmentTransitionNotAllowed(status=appointment.status, target="seated", allowed=[])
            appointment = appointment_set_status(
                organization=organization, user=actor, appointment_id=appointment.id, status=AppointmentStatus.ARRIVED
            )
        if step in ("arrived", "seated"):
            visit.arrived_at = visit.arrived_at or now
        if step == "seated":
            if chair is not None:
                _check_chair(chair, appointment.location_id)
                visit.chair = chair
            visit.seated_at = visit.seated_at or now
        if step == "completed":
            appointment = appointment_set_status(
                organization=organization, user=actor, appointment_id=appointment.id, status=AppointmentStatus.COMPLETED
            )
            visit.completed_at = visit.completed_at or now
        visit.save()
    return appointment, visit


def book(*, organization, actor, data: dict[str, Any]) -> tuple[Appointment, AppointmentVisit | None]:
    """Book from the clinical diary through the appointments app (its clash check: 409 APPOINTMENT_CONFLICT), then
    put the appointment in the chair, all in one transaction. With a chair and no location, the chair's location is
    the appointment's."""
    chair = data.pop("chair", None)
    if chair is not None:
        if data.get("location") is None:
            data["location"] = chair.location
        _check_chair(chair, data["location"].pk)
    with transaction.atomic():
        appointment = appointment_create(organization=organization, user=actor, data=data)
        visit = None
        if chair is not None:
            visit = AppointmentVisit.objects.create(organization=organization, appointment=appointment, chair=chair)
    return appointment, visit


# --- clinical documents ----------------------------------------------------------------------------------------------


def document_store(
    *, organization, patient_id, user, name: str, content_type: str, content: bytes, category: str
) -> ClinicalDocument:
    """Store one file of a patient's clinical record (see apps.clinical.documents for the checks). The patient
    must be of this practice (NotFound otherwise). The file is written first, then the row in one transaction; a
    failed row deletes the file again."""
    if category not in DocumentCategory.values:
        raise DocumentTypeRefused("category", f"must be one of {', '.join(DocumentCategory.values)}")
    content_type = documents.check_document(content_type=content_type, content=content)
    if not Patient.objects.for_org(organization).filter(id=patient_id).exists():
        raise NotFound("No such patient.")
    document_id = uuid.uuid4()
    name_in_storage = documents.storage_name(
        organization_id=organization.pk, document_id=document_id, content_type=content_type
    )
    documents.write(name_in_storage, content)
    try:
        with transaction.atomic():
            document = ClinicalDocument.objects.create(
                id=document_id,
                organization=organization,
                patient_id=patient_id,
                category=category,
                content_type=content_type,
                size=len(content),
                sha256=documents.digest(content),
                name_encrypted=crypto.encrypt(documents.clean_name(name)),
                storage_name=name_in_storage,
                uploaded_by_id=getattr(user, "pk", user),
            )
    except BaseException:
        documents.delete_quietly(name_in_storage)
        raise
    return document


def document_delete(*, organization, actor, document: ClinicalDocument) -> None:
    """Delete the row now and the file once the deletion commits."""
    with transaction.atomic():
        ClinicalDocument.objects.for_org(organization).filter(id=document.id).delete()
        documents.delete_after_commit([document.storage_name])


def document_name(document: ClinicalDocument) -> str:
    return crypto.decrypt(document.name_encrypted)
