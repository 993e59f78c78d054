"""The appointments area's part in erasing and merging a patient (registered in AppointmentsConfig.ready()), and the
hooks through which other areas learn that a slot freed or an appointment completed."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.db import transaction

from apps.appointments.models import Appointment
from apps.patients.public import repoint_rows_to_survivor


def erase_appointments_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the patients' appointments go with them, in the erasing transaction, without events."""
    Appointment.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_appointments_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's appointments belong to the survivor; one appointment.updated each (one INSERT)."""
    repoint_rows_to_survivor(
        organization=organization, model=Appointment, subject_type="appointment", survivor=survivor, duplicate=duplicate
    )


# --- slots freed and appointments completed (apps.recalls: the waitlist and the next recall) -------------------------
#
# Another area registers in its AppConfig.ready():
#
#     appointments.public.on_slot_freed(fn)   # fn(slot: FreedSlot) -> None
#     appointments.public.on_completed(fn)    # fn(*, organization_id, appointment_id) -> None
#
# The services call them after their transaction commits (never for a rollback), so a hook only queues work (a Celery
# task); a hook that raises is logged and does not undo or fail the change.


@dataclass(frozen=True)
class FreedSlot:
    """Time a practitioner had booked that is free again: an appointment cancelled, moved away (its previous times and
    practitioner) or marked no-show before it ended."""

    organization_id: uuid.UUID
    appointment_id: uuid.UUID
    patient_id: uuid.UUID
    practitioner_id: uuid.UUID
    location_id: uuid.UUID | None
    appointment_type: str
    starts_at: datetime
    ends_at: datetime
    reason: str  # "cancelled", "rescheduled" or "no_show"


_slot_freed_hooks: list[Callable[[FreedSlot], None]] = []
_completed_hooks: list[Callable[..., None]] = []


def on_slot_freed(hook: Callable[[FreedSlot], None]) -> Callable[[FreedSlot], None]:
    if hook not in _slot_freed_hooks:
        _slot_freed_hooks.append(hook)
    return hook


def on_completed(hook: Callable[..., None]) -> Callable[..., None]:
    if hook not in _completed_hooks:
        _completed_hooks.append(hook)
    return hook


def slot_freed_after_commit(slot: FreedSlot) -> None:
    for hook in list(_slot_freed_hooks):
        transaction.on_commit(partial(hook, slot), robust=True)


def completed_after_commit(*, organization_id, appointment_id) -> None:
    for hook in list(_completed_hooks):
        transaction.on_commit(
            partial(hook, organization_id=organization_id, appointment_id=appointment_id), robust=True
        )
