"""Celery entry points of recalls and the waitlist: thin, idempotent (row locks with SKIP LOCKED, a per-slot lock,
unique constraints and status checks decide who works)."""

from datetime import datetime
from uuid import UUID

from celery import shared_task

from apps.accounts.models import Organization
from apps.recalls import services, waitlist


def _organization(organization_id: str):
    return Organization.objects.filter(id=organization_id).first()


@shared_task(name="apps.recalls.tasks.send_reminders")
def send_reminders() -> dict:
    """Every five minutes (beat): recall reminders whose moment has come."""
    report = services.reminders_sweep()
    return {"sent": report.sent, "skipped": report.skipped, "deferred": report.deferred}


@shared_task(name="apps.recalls.tasks.expire_offers")
def expire_offers() -> int:
    """Every five minutes (beat): waitlist offers past their expiry; their slots go to the next entries."""
    return waitlist.offers_expire()


@shared_task(name="apps.recalls.tasks.slot_freed")
def slot_freed(organization_id: str, slot: dict, reason: str) -> int:
    """An appointment's slot freed (apps.appointments' hook): recalls it booked are due again (cancelled or missed),
    and the slot is offered to the waitlist. Returns how many offers were made."""
    organization = _organization(organization_id)
    if organization is None:
        return 0
    if reason in ("cancelled", "no_show") and slot.get("freed_appointment_id"):
        services.recalls_reopen_for_appointment(organization=organization, appointment_id=slot["freed_appointment_id"])
    return len(waitlist.waitlist_offer_slot(organization=organization, slot=_slot(slot)))


@shared_task(name="apps.recalls.tasks.offer_slot")
def offer_slot(organization_id: str, slot: dict) -> int:
    """Offer a slot again (an offer of it declined or expired)."""
    organization = _organization(organization_id)
    if organization is None:
        return 0
    return len(waitlist.waitlist_offer_slot(organization=organization, slot=_slot(slot)))


@shared_task(name="apps.recalls.tasks.appointment_completed")
def appointment_completed(organization_id: str, appointment_id: str) -> int:
    """An appointment completed (apps.appointments' hook): its recalls complete and the next ones are set."""
    organization = _organization(organization_id)
    if organization is None:
        return 0
    return len(services.recalls_complete_for_appointment(organization=organization, appointment_id=appointment_id))


def _slot(data: dict) -> waitlist.OpenSlot:
    def uuid_or_none(value):
        return UUID(value) if value else None

    return waitlist.OpenSlot(
        practitioner_id=UUID(data["practitioner_id"]),
        location_id=uuid_or_none(data.get("location_id")),
        appointment_type=data["appointment_type"],
        starts_at=datetime.fromisoformat(data["starts_at"]),
        ends_at=datetime.fromisoformat(data["ends_at"]),
        freed_appointment_id=uuid_or_none(data.get("freed_appointment_id")),
        patient_id=uuid_or_none(data.get("patient_id")),
    )
