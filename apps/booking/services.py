"""Writes of online booking. Settings: booking pages and their token. Public: holds on a slot, completing a hold into
an appointment (idempotent by the hold; with the marketing consent the patient ticked recorded as evidence), and a
patient's own cancel and reschedule by the management uid.

Races: two visitors holding one slot insert overlapping active holds; the holds' exclusion constraint lets exactly
one commit, the other answers 409 BOOKING_SLOT_UNAVAILABLE. Completing books through the appointments service, whose
own exclusion constraint guards the diary against the team's bookings made meanwhile.
"""

import itertools
import secrets
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone

from apps.appointments.public import (
    AppointmentClosed,
    AppointmentConflict,
    appointment_cancel,
    appointment_create,
    appointment_reschedule,
    first_clash,
)
from apps.booking import selectors
from apps.booking.errors import ChangeNotAllowed, HoldExpired, SlotUnavailable
from apps.booking.models import BookingHold, BookingPage, HoldStatus
from apps.core.errors import NotFound, ValidationFailed
from apps.journeys.public import Journey, JourneyStatus, journey_create, treatment_ensure_builtin
from apps.patients.public import (
    Location,
    MarketingConsent,
    Practitioner,
    consent_record,
    patient_create,
    patient_match,
)

HOLD_MINUTES = 10
NO_OVERLAP = "booking_holds_no_overlap"
DEADLOCK_DETECTED = "40P01"
SAVE_ATTEMPTS = 3
SOURCE = "online_booking"
CONSENT_SOURCE = "booking_page"


def new_token() -> str:
    return secrets.token_urlsafe(32)


# --- settings ---------------------------------------------------------------------------------------------------------

PAGE_FIELDS = (
    "name",
    "active",
    "lead_time_minutes",
    "horizon_days",
    "slot_minutes",
    "change_notice_minutes",
    "consent_text",
)


def _apply(page: BookingPage, data: dict[str, Any]) -> None:
    for field in PAGE_FIELDS:
        if field in data:
            setattr(page, field, data[field])
    page.save()
    for relation in ("treatments", "locations", "practitioners"):
        if relation in data:
            getattr(page, relation).set(data[relation])


@transaction.atomic
def page_create(*, organization, data: dict[str, Any]) -> BookingPage:
    page = BookingPage(organization=organization, token=new_token())
    _apply(page, data)
    return page


@transaction.atomic
def page_update(*, organization, page: BookingPage, data: dict[str, Any]) -> BookingPage:
    page = BookingPage.objects.for_org(organization).select_for_update().get(id=page.id)
    _apply(page, data)
    return page


@transaction.atomic
def page_rotate_token(*, organization, page: BookingPage) -> BookingPage:
    """A new token; the old one answers 404 at once. Bookings already made keep their management uids."""
    page = BookingPage.objects.for_org(organization).select_for_update().get(id=page.id)
    page.token = new_token()
    page.save(update_fields=["token", "updated_at"])
    return page


@transaction.atomic
def page_archive(*, organization, page: BookingPage) -> None:
    BookingPage.objects.for_org(organization).filter(id=page.id).update(
        archived_at=timezone.now(), active=False, updated_at=timezone.now()
    )


# --- public: holds ----------------------------------------------------------------------------------------------------


def _find_slot(page: BookingPage, *, practitioner_id, starts_at, location_id=None, exclude_uid=None):
    """The page's free slot of this practitioner starting at `starts_at`, or 409: a time the page does not offer
    (off its grid, outside working hours, sooner than the lead time, beyond the horizon, taken or held)."""
    local_day = starts_at.astimezone(selectors.practice_timezone(page.organization)).date()
    for slot in selectors.page_slots(
        page, first_day=local_day, last_day=local_day, practitioner_ids=[practitioner_id], location_id=location_id
    ):
        if slot.starts_at == starts_at and slot.practitioner_id == practitioner_id:
            return slot
    raise SlotUnavailable()


def _check_treatment(page: BookingPage, treatment):
    if treatment is None:
        return None
    offered = {t.id for t in selectors.page_offer(page).treatments}
    if treatment.id not in offered:
        raise ValidationFailed.for_field("treatmentId", "is not offered on this booking page")
    return treatment


def _is_deadlock(exc: OperationalError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == DEADLOCK_DETECTED


def _insert_hold(hold: BookingHold) -> None:
    """Insert in a savepoint; an overlapping active hold (a visitor who got there first) is 409. Two inserts at the
    same instant may deadlock on each other's uncommitted rows: the one PostgreSQL aborts inserts again and then
    meets the constraint."""
    for attempt in itertools.count(1):
        try:
            with transaction.atomic():
                hold.save(force_insert=True)
            return
        except OperationalError as exc:
            if not _is_deadlock(exc) or attempt >= SAVE_ATTEMPTS:
                raise
        except IntegrityError as exc:
            if NO_OVERLAP not in str(exc):
                raise
            raise SlotUnavailable() from None


@transaction.atomic
def hold_create(*, page: BookingPage, practitioner_id, starts_at, location_id=None, treatment=None) -> BookingHold:
    organization = page.organization
    treatment = _check_treatment(page, treatment)
    slot = _find_slot(page, practitioner_id=practitioner_id, starts_at=starts_at, location_id=location_id)
    now = timezone.now()
    # Holds whose time ran out stop blocking before this one is written (the constraint sees only active ones).
    BookingHold.objects.for_org(organization).filter(
        practitioner_id=slot.practitioner_id,
        status=HoldStatus.ACTIVE,
        expires_at__lte=now,
        starts_at__lt=slot.ends_at,
        ends_at__gt=slot.starts_at,
    ).update(status=HoldStatus.EXPIRED, updated_at=now)
    if first_clash(
        organization=organization, practitioner_id=slot.practitioner_id, starts_at=slot.starts_at, ends_at=slot.ends_at
    ):
        raise SlotUnavailable()
    hold = BookingHold(
        organization=organization,
        page=page,
        key=new_token(),
        practitioner_id=slot.practitioner_id,
        location_id=location_id if location_id is not None else slot.location_id,
        treatment=treatment,
        starts_at=slot.starts_at,
        ends_at=slot.ends_at,
        expires_at=now + timedelta(minutes=HOLD_MINUTES),
    )
    _insert_hold(hold)
    return hold


def _journey_for(*, organization, patient, treatment) -> Journey:
    """The patient's open journey on the treatment, else a new one (General enquiry without a treatment)."""
    treatment = treatment or treatment_ensure_builtin(organization=organization)
    current = (
        Journey.objects.for_org(organization)
        .filter(patient=patient, status=JourneyStatus.OPEN, treatment=treatment)
        .order_by("created_at", "id")
        .first()
    )
    if current is not None:
        return current
    return journey_create(
        organization=organization,
        user=None,
        data={"patient": patient, "treatment": treatment, "source": SOURCE, "assignee": None},
    )


@transaction.atomic
def hold_complete(*, page: BookingPage, key: str, data: dict[str, Any]) -> tuple[BookingHold, bool]:
    """Book the held slot: match the patient by e-mail or phone (or create them), open (or reuse) their journey on
    the treatment, create the appointment, and record the marketing consent the patient ticked (`marketing_consent`)
    for the channels they gave. (booking, created): a completed hold answers its booking again (nothing recorded)."""
    organization = page.organization
    if selectors.hold_for_key(page, key) is None:  # also refuses what no key looks like (a NUL) before locking
        raise NotFound("No such hold.")
    hold = (
        BookingHold.objects.for_org(organization)
        .select_for_update(of=("self",))
        .select_related("treatment")
        .filter(page=page, key=key)
        .first()
    )
    if hold is None:
        raise NotFound("No such hold.")
    if hold.status == HoldStatus.COMPLETED:
        return hold, False
    if hold.status != HoldStatus.ACTIVE or hold.expires_at <= timezone.now():
        raise HoldExpired()
    patient = patient_match(organization=organization, email=data.get("email"), phone=data.get("phone"))
    if patient is None:
        patient = patient_create(
            organization=organization,
            user=None,
            data={
                "first_name": data["first_name"],
                "last_name": data.get("last_name") or "",
                "email": data.get("email") or None,
                "phone_mobile": data.get("phone") or None,
            },
        )
    journey = _journey_for(organization=organization, patient=patient, treatment=hold.treatment)
    try:
        appointment = appointment_create(
            organization=organization,
            user=None,
            data={
                "patient": patient,
                "practitioner": hold.practitioner,
                "location": hold.location,
                "treatment": hold.treatment or journey.treatment,
                "journey": journey,
                "starts_at": hold.starts_at,
                "ends_at": hold.ends_at,
                "notes": data.get("notes") or "",
            },
        )
    except AppointmentConflict:
        raise SlotUnavailable() from None
    if data.get("marketing_consent"):
        _record_consent(page=page, patient=patient, appointment=appointment, data=data)
    hold.status = HoldStatus.COMPLETED
    hold.appointment = appointment
    hold.uid = new_token()
    hold.completed_at = timezone.now()
    hold.save(update_fields=["status", "appointment", "uid", "completed_at", "updated_at"])
    return hold, True


def _record_consent(*, page: BookingPage, patient, appointment, data: dict[str, Any]) -> None:
    """Marketing consent granted for each channel the patient gave (e-mail, SMS for a phone), with the page's
    wording shown beside the ticked checkbox as evidence."""
    channels = [MarketingConsent.Channel.EMAIL] if data.get("email") else []
    channels += [MarketingConsent.Channel.SMS] if data.get("phone") else []
    evidence = (
        f"Ticked on booking page {page.id} ({page.name}) when booking appointment {appointment.id} at "
        f"{timezone.now().isoformat()}. Wording shown: {page.consent_text}"
    )
    for channel in channels:
        consent_record(
            organization=page.organization,
            user=None,
            patient=patient,
            channel=channel,
            status=MarketingConsent.State.GRANTED,
            source=CONSENT_SOURCE,
            evidence=evidence,
        )


# --- public: manage by uid --------------------------------------------------------------------------------------------


def _ensure_changeable(booking: BookingHold) -> None:
    refusal = selectors.change_refusal(booking)
    if refusal is not None:
        raise ChangeNotAllowed(details=refusal)


@transaction.atomic
def booking_cancel(*, booking: BookingHold, reason: str = "") -> BookingHold:
    if booking.appointment.status == "cancelled":
        return booking
    _ensure_changeable(booking)
    try:
        booking.appointment = appointment_cancel(
            organization=booking.organization,
            user=None,
            appointment_id=booking.appointment_id,
            reason=reason or "Cancelled online by the patient",
        )
    except AppointmentClosed:
        raise ChangeNotAllowed() from None
    return booking


@transaction.atomic
def booking_reschedule(*, booking: BookingHold, starts_at, practitioner_id=None) -> BookingHold:
    """Move to another free slot the page offers (same practitioner unless another one of the page is named)."""
    _ensure_changeable(booking)
    page = booking.page
    page.organization = booking.organization
    practitioner_id = practitioner_id or booking.appointment.practitioner_id
    slot = _find_slot(page, practitioner_id=practitioner_id, starts_at=starts_at)
    try:
        booking.appointment = appointment_reschedule(
            organization=booking.organization,
            user=None,
            appointment_id=booking.appointment_id,
            data={
                "starts_at": slot.starts_at,
                "ends_at": slot.ends_at,
                "practitioner": _practitioner(booking.organization, slot.practitioner_id),
                "location": _location(booking.organization, slot.location_id) or booking.appointment.location,
            },
        )
    except AppointmentConflict:
        raise SlotUnavailable() from None
    except AppointmentClosed:
        raise ChangeNotAllowed() from None
    return booking


def _practitioner(organization, practitioner_id):
    return Practitioner.objects.for_org(organization).get(id=practitioner_id)


def _location(organization, location_id):
    if location_id is None:
        return None
    return Location.objects.for_org(organization).filter(id=location_id).first()
