"""Reads of online booking: a page by its token, a booking by its management uid, and the slots a page offers."""

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.utils import timezone

from apps.appointments.public import availability
from apps.booking.models import BookingHold, BookingPage, HoldStatus
from apps.journeys.public import Treatment
from apps.patients.public import Location, Practitioner
from apps.tasks.public import practice_timezone

MAX_TOKEN = 64
# Page tokens, management uids and hold keys are URL-safe base64 (secrets.token_urlsafe): anything else (a NUL
# included, which PostgreSQL text cannot hold) is unknown before any lookup.
OPAQUE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _opaque(value: str | None) -> bool:
    return bool(value) and OPAQUE.fullmatch(value) is not None


# A patient may cancel or move their booking online only while its appointment is one of these.
CHANGEABLE_STATUSES = ("booked", "confirmed")
# More than a 4-week horizon of 10 practitioners in 15-minute slots ever offers.
MAX_SLOTS = 20_000


def page_for_token(token: str) -> BookingPage | None:
    """The active booking page this token publishes, or None: unknown, rotated and archived look the same."""
    if not _opaque(token):
        return None
    return (
        BookingPage.objects.unscoped()
        .select_related("organization")
        .filter(token=token, active=True, archived_at__isnull=True)
        .first()
    )


def booking_for_uid(uid: str) -> BookingHold | None:
    """The completed booking this management uid names, with its appointment, page and practice; or None."""
    if not _opaque(uid):
        return None
    return (
        BookingHold.objects.unscoped()
        .select_related("organization", "page", "appointment", "practitioner", "location", "treatment")
        .filter(uid=uid, status=HoldStatus.COMPLETED, appointment__isnull=False)
        .first()
    )


def change_refusal(booking: BookingHold, now: datetime | None = None) -> dict | None:
    """Why the patient may no longer cancel or move this booking online (the details of 409
    BOOKING_CHANGE_NOT_ALLOWED), or None while they may: its appointment is booked or confirmed and starts more than
    the page's change notice from now."""
    appointment = booking.appointment
    if appointment.status not in CHANGEABLE_STATUSES:
        return {"status": appointment.status}
    notice = timedelta(minutes=booking.page.change_notice_minutes)
    if appointment.starts_at - (now or timezone.now()) < notice:
        return {"changeNoticeMinutes": booking.page.change_notice_minutes}
    return None


def page_list(*, organization) -> list[BookingPage]:
    return list(
        BookingPage.objects.for_org(organization)
        .filter(archived_at__isnull=True)
        .prefetch_related("treatments", "locations", "practitioners")
        .order_by("created_at", "id")
    )


def page_get(*, organization, page_id) -> BookingPage | None:
    return (
        BookingPage.objects.for_org(organization)
        .filter(id=page_id, archived_at__isnull=True)
        .prefetch_related("treatments", "locations", "practitioners")
        .first()
    )


@dataclass(frozen=True)
class Offer:
    """What a page offers: the ids chosen on it, or every usable one of the practice when it chose none."""

    treatments: list
    locations: list
    practitioners: list


def page_offer(page: BookingPage) -> Offer:
    organization = page.organization
    treatment_ids = [t.id for t in page.treatments.all()]
    location_ids = [loc.id for loc in page.locations.all()]
    practitioner_ids = [p.id for p in page.practitioners.all()]
    treatments = Treatment.objects.for_org(organization).filter(active=True)
    locations = Location.objects.for_org(organization).filter(archived_at__isnull=True)
    practitioners = Practitioner.objects.for_org(organization).filter(archived_at__isnull=True)
    if treatment_ids:
        treatments = treatments.filter(id__in=treatment_ids)
    if location_ids:
        locations = locations.filter(id__in=location_ids)
    if practitioner_ids:
        practitioners = practitioners.filter(id__in=practitioner_ids)
    return Offer(
        treatments=list(treatments.order_by("name", "id")),
        locations=list(locations.order_by("name", "id")),
        practitioners=list(practitioners.order_by("name", "id")),
    )


def bookable_days(page: BookingPage, now: datetime | None = None) -> tuple[date, date]:
    """The first and last local day a patient may book on (today .. today + horizon)."""
    now = now or timezone.now()
    today = now.astimezone(practice_timezone(page.organization)).date()
    return today, today + timedelta(days=page.horizon_days)


def page_slots(
    page: BookingPage,
    *,
    first_day: date,
    last_day: date,
    practitioner_ids: list | None = None,
    location_id=None,
    limit: int = MAX_SLOTS,
):
    """Free slots of the page's length within [first_day, last_day] (practice local days): the appointments area's
    working hours minus appointments holding time (its `availability`), then the page's rules: its practitioners
    and locations, no sooner than the lead time, no later than the horizon, and not under another visitor's hold."""
    organization = page.organization
    offered = [p.id for p in page.practitioners.all()]
    if practitioner_ids:
        chosen = [pid for pid in practitioner_ids if not offered or pid in offered]
        if not chosen:
            return []
    else:
        chosen = offered or None
    allowed_locations = {loc.id for loc in page.locations.all()}
    if location_id is not None and allowed_locations and location_id not in allowed_locations:
        return []
    now = timezone.now()
    first_allowed, last_allowed = bookable_days(page, now)
    first_day, last_day = max(first_day, first_allowed), min(last_day, last_allowed)
    if first_day > last_day:
        return []
    length = timedelta(minutes=page.slot_minutes)
    slots = availability(
        organization=organization,
        first_day=first_day,
        last_day=last_day,
        duration=length,
        step=length,
        practitioner_ids=chosen,
        location_id=location_id,
        limit=MAX_SLOTS,
    )
    earliest = now + timedelta(minutes=page.lead_time_minutes)
    if not slots:
        return []
    held: dict[object, list[tuple[datetime, datetime]]] = {}
    for practitioner_id, starts_at, ends_at in (
        BookingHold.objects.for_org(organization)
        .filter(
            status=HoldStatus.ACTIVE,
            expires_at__gt=now,
            practitioner_id__in={slot.practitioner_id for slot in slots},
            starts_at__lt=slots[-1].ends_at,
            ends_at__gt=slots[0].starts_at,
        )
        .values_list("practitioner_id", "starts_at", "ends_at")
    ):
        held.setdefault(practitioner_id, []).append((starts_at, ends_at))
    offered_slots = []
    for slot in slots:
        if slot.starts_at < earliest:
            continue
        if allowed_locations and slot.location_id not in allowed_locations:
            continue
        if any(
            h_start < slot.ends_at and h_end > slot.starts_at for h_start, h_end in held.get(slot.practitioner_id, ())
        ):
            continue
        offered_slots.append(slot)
        if len(offered_slots) >= limit:
            break
    return offered_slots


def hold_for_key(page: BookingPage, key: str) -> BookingHold | None:
    """The page's hold with this opaque key (any status), or None."""
    if not _opaque(key):
        return None
    return BookingHold.objects.for_org(page.organization).filter(page=page, key=key).first()
