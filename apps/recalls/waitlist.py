"""Writes of the waitlist: entries, offers of freed slots, accepting and declining them, and the expiry sweep.

Entry statuses: waiting → offered → booked, or removed (and offered → waiting again when its offer is declined,
expires or is closed). Offer statuses: open → accepted, declined, expired, or closed (the slot went to someone else,
or the entry left the list).

A freed slot (apps.appointments' on_slot_freed hook, through a Celery task) is offered to up to OFFERS_PER_SLOT
waiting entries that match it, most urgent first (priority 1 before 5, then the longest waiting): same appointment
type; the entry's practitioner, when named; the slot's practice-local weekday among the preferred days and its
times inside the preferred hours, when given; its day between the earliest and latest dates, when given; earlier
than the appointment the patient wants to move, when named; never the patient whose appointment freed it; never an
entry already offered this slot. A slot that starts within MIN_NOTICE, or that is no longer free, is not offered.
Each offer holds until OFFER_VALID has passed (never past the slot's start) and sends the patient a care message.
The team accepts an offer (the patient said yes): the slot is booked through apps.appointments' appointment_create
(a clash is 409 APPOINTMENT_CONFLICT and the offer closes), the other open offers of that slot close, and the
appointment the entry wanted to move is cancelled (which frees that slot in turn)."""

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.appointments.public import (
    ACTIVE_STATUSES,
    AppointmentConflict,
    appointment_cancel,
    appointment_create,
    first_clash,
)
from apps.core import crypto
from apps.core.errors import NotFound, ValidationFailed
from apps.core.writes import assign_fields
from apps.patients.public import PatientMerged, Practitioner
from apps.recalls import messaging
from apps.recalls.errors import OfferClosed, WaitlistEntryClosed
from apps.recalls.models import OfferStatus, WaitlistEntry, WaitlistOffer, WaitlistStatus
from apps.recalls.services import practice_zone

OFFER_VALID = timedelta(hours=2)
OFFERS_PER_SLOT = 3
MIN_NOTICE = timedelta(minutes=30)
WAITLIST_SOURCE = "waitlist"  # Message.source of offers
SLOT_TAKEN = "SLOT_TAKEN"
ENTRY_REMOVED = "ENTRY_REMOVED"
EXPIRY_BATCH = 200

ENTRY_FIELDS = (
    "appointment_type",
    "practitioner",
    "preferred_days",
    "preferred_from",
    "preferred_until",
    "earliest_date",
    "latest_date",
    "appointment",
    "priority",
)
OPEN_ENTRY_STATUSES = (WaitlistStatus.WAITING, WaitlistStatus.OFFERED)


def entry_notes(entry: WaitlistEntry) -> str:
    return crypto.decrypt(entry.notes_encrypted) if entry.notes_encrypted else ""


def _assign(entry: WaitlistEntry, data: dict[str, Any]) -> None:
    assign_fields(
        entry, data, fields=ENTRY_FIELDS, relations={"practitioner": "practitioner", "appointment": "appointment"}
    )
    if "preferred_days" in data:
        entry.preferred_days = sorted(set(data["preferred_days"] or []))
    if "notes" in data:
        notes = data["notes"] or ""
        entry.notes_encrypted = crypto.encrypt(notes) if notes else ""


def _check(entry: WaitlistEntry) -> None:
    if entry.earliest_date and entry.latest_date and entry.latest_date < entry.earliest_date:
        raise ValidationFailed.for_field("latestDate", "must not be before earliestDate")
    if entry.preferred_from and entry.preferred_until and entry.preferred_until <= entry.preferred_from:
        raise ValidationFailed.for_field("preferredUntil", "must be after preferredFrom")
    appointment = entry.appointment
    if appointment is not None:
        if appointment.patient_id != entry.patient_id:
            raise ValidationFailed.for_field("appointmentId", "is an appointment of another patient")
        if appointment.status not in ACTIVE_STATUSES:
            raise ValidationFailed.for_field("appointmentId", f"is {appointment.status}")


@transaction.atomic
def waitlist_entry_create(*, organization, user, data: dict[str, Any]) -> WaitlistEntry:
    patient = data["patient"]
    if patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)
    entry = WaitlistEntry(organization=organization, patient=patient, created_by=user)
    _assign(entry, data)
    _check(entry)
    entry.save(force_insert=True)
    return entry


def _locked_entry(*, organization, entry_id) -> WaitlistEntry:
    entry = WaitlistEntry.objects.for_org(organization).select_for_update(of=("self",)).filter(id=entry_id).first()
    if entry is None:
        raise NotFound("No such waitlist entry.")
    return entry


@transaction.atomic
def waitlist_entry_update(*, organization, user, entry_id, data: dict[str, Any]) -> WaitlistEntry:
    entry = _locked_entry(organization=organization, entry_id=entry_id)
    if entry.status not in OPEN_ENTRY_STATUSES:
        raise WaitlistEntryClosed(entry.status)
    _assign(entry, data)
    _check(entry)
    entry.save()
    return entry


def _close_open_offers(*, organization, entry_ids, reason: str, exclude_id=None) -> None:
    offers = WaitlistOffer.objects.for_org(organization).filter(entry_id__in=entry_ids, status=OfferStatus.OPEN)
    if exclude_id is not None:
        offers = offers.exclude(id=exclude_id)
    offers.update(status=OfferStatus.CLOSED, closed_reason=reason, decided_at=timezone.now(), updated_at=timezone.now())


@transaction.atomic
def waitlist_entry_remove(*, organization, user, entry_id) -> WaitlistEntry:
    """Take the entry off the list (its open offer closes). Repeating is harmless; a booked entry stays booked."""
    entry = _locked_entry(organization=organization, entry_id=entry_id)
    if entry.status == WaitlistStatus.REMOVED:
        return entry
    if entry.status == WaitlistStatus.BOOKED:
        raise WaitlistEntryClosed(entry.status)
    _close_open_offers(organization=organization, entry_ids=[entry.id], reason=ENTRY_REMOVED)
    entry.status = WaitlistStatus.REMOVED
    entry.save()
    return entry


# --- offering a freed slot --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenSlot:
    practitioner_id: UUID
    location_id: UUID | None
    appointment_type: str
    starts_at: datetime
    ends_at: datetime
    freed_appointment_id: UUID | None = None
    patient_id: UUID | None = None  # the patient whose appointment freed it (not offered their own slot back)

    def as_task_args(self) -> dict:
        """JSON for a Celery task: times in ISO 8601, ids as strings (None stays None)."""

        def wire(value):
            if isinstance(value, datetime):
                return value.isoformat()
            return None if value is None else str(value)

        return {key: wire(value) for key, value in asdict(self).items()}


def matching_entries(organization, slot: OpenSlot):
    """Waiting entries this slot suits, most urgent first (one query)."""
    zone = practice_zone(organization)
    start, end = slot.starts_at.astimezone(zone), slot.ends_at.astimezone(zone)
    same_day_end = end.time() if end.date() == start.date() else None
    offered_before = WaitlistOffer.objects.for_org(organization).filter(
        practitioner_id=slot.practitioner_id, starts_at=slot.starts_at
    )
    entries = (
        WaitlistEntry.objects.for_org(organization)
        .filter(status=WaitlistStatus.WAITING, appointment_type=slot.appointment_type)
        .filter(Q(practitioner__isnull=True) | Q(practitioner_id=slot.practitioner_id))
        .filter(Q(preferred_days=[]) | Q(preferred_days__contains=[start.weekday()]))
        .filter(Q(preferred_from__isnull=True) | Q(preferred_from__lte=start.time()))
        .filter(Q(earliest_date__isnull=True) | Q(earliest_date__lte=start.date()))
        .filter(Q(latest_date__isnull=True) | Q(latest_date__gte=start.date()))
        .filter(
            Q(appointment__isnull=True)
            | Q(appointment__starts_at__gt=slot.starts_at, appointment__status__in=ACTIVE_STATUSES)
        )
        .exclude(id__in=offered_before.values("entry_id"))
    )
    if same_day_end is None:
        entries = entries.filter(preferred_until__isnull=True)
    else:
        entries = entries.filter(Q(preferred_until__isnull=True) | Q(preferred_until__gte=same_day_end))
    if slot.patient_id is not None:
        entries = entries.exclude(patient_id=slot.patient_id)
    return entries.order_by("priority", "created_at", "id")


def _slot_lock(organization, slot: OpenSlot) -> None:
    """One offering of a slot at a time (a task run twice, or a decline racing the freeing): a transaction lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            [f"recalls.slot:{organization.pk}:{slot.practitioner_id}:{slot.starts_at.isoformat()}"],
        )


def _offer_text(organization, offer: WaitlistOffer, practitioner_name: str, patient) -> tuple[str, str]:
    zone = practice_zone(organization)
    when = offer.starts_at.astimezone(zone).strftime("%a %d %b at %H:%M")
    until = offer.expires_at.astimezone(zone).strftime("%H:%M on %d %b")
    with_whom = f" with {practitioner_name}" if practitioner_name else ""
    body = (
        f"{messaging.greeting(patient)}an earlier appointment is free at {organization.name}: {when}{with_whom}. "
        f"Reply or call us by {until} to take it."
    )
    return "An earlier appointment is free", body


@transaction.atomic
def waitlist_offer_slot(*, organization, slot: OpenSlot, now: datetime | None = None) -> list[WaitlistOffer]:
    """Offer a free slot to the best matching waiting entries (up to OFFERS_PER_SLOT open offers for it)."""
    now = now or timezone.now()
    if slot.starts_at < now + MIN_NOTICE:
        return []
    _slot_lock(organization, slot)
    if first_clash(
        organization=organization,
        practitioner_id=slot.practitioner_id,
        starts_at=slot.starts_at,
        ends_at=slot.ends_at,
    ):
        return []  # booked again before we got to it
    still_open = (
        WaitlistOffer.objects.for_org(organization)
        .filter(practitioner_id=slot.practitioner_id, starts_at=slot.starts_at, status=OfferStatus.OPEN)
        .count()
    )
    wanted = OFFERS_PER_SLOT - still_open
    if wanted <= 0:
        return []
    entries = list(
        matching_entries(organization, slot)
        .select_related("patient")
        .select_for_update(of=("self",), skip_locked=True)[:wanted]
    )
    if not entries:
        return []
    expires_at = min(now + OFFER_VALID, slot.starts_at)
    offers = [
        WaitlistOffer(
            organization=organization,
            entry=entry,
            patient_id=entry.patient_id,
            practitioner_id=slot.practitioner_id,
            location_id=slot.location_id,
            appointment_type=slot.appointment_type,
            starts_at=slot.starts_at,
            ends_at=slot.ends_at,
            expires_at=expires_at,
            freed_appointment_id=slot.freed_appointment_id,
        )
        for entry in entries
    ]
    WaitlistOffer.objects.bulk_create(offers)
    for entry in entries:
        entry.status, entry.updated_at = WaitlistStatus.OFFERED, now
    WaitlistEntry.unscoped_objects.bulk_update(entries, ["status", "updated_at"])
    name = Practitioner.objects.for_org(organization).filter(id=slot.practitioner_id).values_list("name", flat=True)
    practitioner_name = name.first() or ""
    notes = []
    for offer, entry in zip(offers, entries, strict=True):
        subject, text = _offer_text(organization, offer, practitioner_name, entry.patient)
        notes.append(messaging.Note(str(offer.id), entry.patient, subject, text))
    outcomes = messaging.send_care_messages(organization=organization, notes=notes, source=WAITLIST_SOURCE)
    for offer in offers:
        outcome = outcomes[str(offer.id)]
        offer.message_id = outcome.message_id
        offer.message_skipped_reason = outcome.skipped_reason or ""
    WaitlistOffer.unscoped_objects.bulk_update(offers, ["message_id", "message_skipped_reason"])
    return offers


def slot_of(offer: WaitlistOffer) -> OpenSlot:
    return OpenSlot(
        practitioner_id=offer.practitioner_id,
        location_id=offer.location_id,
        appointment_type=offer.appointment_type,
        starts_at=offer.starts_at,
        ends_at=offer.ends_at,
        freed_appointment_id=offer.freed_appointment_id,
    )


def _reoffer_after_commit(organization, slots: list[OpenSlot]) -> None:
    from apps.recalls.tasks import offer_slot

    for slot in {(s.practitioner_id, s.starts_at): s for s in slots}.values():
        args = slot.as_task_args()
        transaction.on_commit(lambda args=args: offer_slot.delay(str(organization.pk), args), robust=True)


def _locked_offer(*, organization, offer_id) -> WaitlistOffer:
    offer = (
        WaitlistOffer.objects.for_org(organization)
        .select_for_update(of=("self",))
        .select_related("patient", "practitioner", "location")
        .filter(id=offer_id)
        .first()
    )
    if offer is None:
        raise NotFound("No such waitlist offer.")
    return offer


def _back_to_waiting(*, organization, entry_ids) -> None:
    WaitlistEntry.objects.for_org(organization).filter(id__in=entry_ids, status=WaitlistStatus.OFFERED).update(
        status=WaitlistStatus.WAITING, updated_at=timezone.now()
    )


def _finish(offer: WaitlistOffer, status: str, user=None, reason: str = "") -> None:
    offer.status, offer.closed_reason = status, reason
    offer.decided_at, offer.decided_by = timezone.now(), user
    offer.save()


def waitlist_offer_accept(*, organization, user, offer_id) -> WaitlistOffer:
    """Book the offered slot for the patient. A slot taken meanwhile answers 409 APPOINTMENT_CONFLICT and the offer
    closes (the entry waits again); an offer no longer open answers 409 WAITLIST_OFFER_CLOSED."""
    with transaction.atomic():
        offer = _locked_offer(organization=organization, offer_id=offer_id)
        if offer.status != OfferStatus.OPEN:
            raise OfferClosed(offer.status)
        entry = _locked_entry(organization=organization, entry_id=offer.entry_id)
        failure = None
        if offer.expires_at <= timezone.now():
            _finish(offer, OfferStatus.EXPIRED)
            _back_to_waiting(organization=organization, entry_ids=[entry.id])
            failure = OfferClosed(OfferStatus.EXPIRED)
        else:
            try:
                appointment = appointment_create(
                    organization=organization,
                    user=user,
                    data={
                        "patient": offer.patient,
                        "practitioner": offer.practitioner,
                        "location": offer.location,
                        "appointment_type": offer.appointment_type,
                        "starts_at": offer.starts_at,
                        "ends_at": offer.ends_at,
                    },
                )
            except AppointmentConflict as exc:
                _finish(offer, OfferStatus.CLOSED, user, SLOT_TAKEN)
                _back_to_waiting(organization=organization, entry_ids=[entry.id])
                failure = exc
            else:
                _accepted(organization=organization, user=user, offer=offer, entry=entry, appointment=appointment)
        if failure is None:
            return offer
    raise failure  # after the commit: the closed offer stays closed


def _accepted(*, organization, user, offer: WaitlistOffer, entry: WaitlistEntry, appointment) -> None:
    offer.appointment = appointment
    _finish(offer, OfferStatus.ACCEPTED, user)
    siblings = WaitlistOffer.objects.for_org(organization).filter(
        practitioner_id=offer.practitioner_id, starts_at=offer.starts_at, status=OfferStatus.OPEN
    )
    sibling_entries = list(siblings.values_list("entry_id", flat=True))
    siblings.update(
        status=OfferStatus.CLOSED, closed_reason=SLOT_TAKEN, decided_at=timezone.now(), updated_at=timezone.now()
    )
    _back_to_waiting(organization=organization, entry_ids=sibling_entries)
    moved = entry.appointment
    entry.status, entry.booked_appointment = WaitlistStatus.BOOKED, appointment
    entry.save()
    if moved is not None and moved.status in ACTIVE_STATUSES:
        appointment_cancel(
            organization=organization,
            user=user,
            appointment_id=moved.id,
            reason="Moved to an earlier slot from the waitlist",
        )


@transaction.atomic
def waitlist_offer_decline(*, organization, user, offer_id) -> WaitlistOffer:
    """The patient said no: the entry waits again and the slot goes to the next matching entry."""
    offer = _locked_offer(organization=organization, offer_id=offer_id)
    if offer.status != OfferStatus.OPEN:
        raise OfferClosed(offer.status)
    _finish(offer, OfferStatus.DECLINED, user)
    _back_to_waiting(organization=organization, entry_ids=[offer.entry_id])
    _reoffer_after_commit(offer.organization, [slot_of(offer)])
    return offer


def offers_expire(*, now: datetime | None = None) -> int:
    """Beat: open offers past their expiry become expired, their entries wait again, and each slot still ahead is
    offered to the next matching entry (after the commit)."""
    now = now or timezone.now()
    with transaction.atomic():
        offers = list(
            WaitlistOffer.objects.unscoped()
            .select_for_update(of=("self",), skip_locked=True)
            .select_related("organization")
            .filter(status=OfferStatus.OPEN, expires_at__lte=now)
            .order_by("expires_at")[:EXPIRY_BATCH]
        )
        by_organization: dict = {}
        for offer in offers:
            by_organization.setdefault(offer.organization_id, []).append(offer)
        for group in by_organization.values():
            organization = group[0].organization
            WaitlistOffer.objects.for_org(organization).filter(id__in=[o.id for o in group]).update(
                status=OfferStatus.EXPIRED, decided_at=now, updated_at=now
            )
            _back_to_waiting(organization=organization, entry_ids=[o.entry_id for o in group])
            _reoffer_after_commit(organization, [slot_of(o) for o in group if o.starts_at > now + MIN_NOTICE])
    return len(offers)
