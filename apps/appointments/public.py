"""The appointments app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the appointment model and its active statuses, the day's appointments selector and the
renderer of an appointment row (the Today view: `appointment_row` for `.values(*APPOINTMENT_VALUES)` rows; the
serializer is the schema). Online booking (apps.booking) offers the free slots of `availability`, checks a slot with
`first_clash`, and books, cancels and reschedules through the appointment services (the exclusion constraint
settles races; the loser gets AppointmentConflict). The clinical day list (apps.clinical) books with the appointment
types of `AppointmentType` and moves a patient along the day (arrived, completed) with `appointment_set_status`
(AppointmentTransitionNotAllowed when the status does not allow it). Hooks (apps.recalls; register in
AppConfig.ready(); called after the commit, so a hook only queues work): `on_slot_freed(fn)`, fn(slot: FreedSlot)
when an appointment is cancelled, moved away (its previous times and practitioner) or marked no-show before it
ends; `on_completed(fn)`, fn(*, organization_id, appointment_id) when an appointment is marked completed.
"""

from apps.appointments.errors import AppointmentClosed, AppointmentConflict, AppointmentTransitionNotAllowed
from apps.appointments.hooks import FreedSlot, on_completed, on_slot_freed
from apps.appointments.models import (
    ACTIVE_STATUSES,
    BLOCKING_STATUSES,
    MAX_LENGTH,
    Appointment,
    AppointmentStatus,
    AppointmentType,
)
from apps.appointments.renderers import APPOINTMENT_VALUES, AppointmentSerializer, appointment_row
from apps.appointments.reporting import outcomes_between
from apps.appointments.selectors import Slot, appointments_between, availability, first_clash
from apps.appointments.services import (
    appointment_cancel,
    appointment_create,
    appointment_reschedule,
    appointment_set_status,
)
from apps.appointments.transfer import appointments_export

__all__ = [
    "ACTIVE_STATUSES",
    "APPOINTMENT_VALUES",
    "BLOCKING_STATUSES",
    "MAX_LENGTH",
    "Appointment",
    "AppointmentClosed",
    "AppointmentConflict",
    "AppointmentSerializer",
    "AppointmentStatus",
    "AppointmentTransitionNotAllowed",
    "AppointmentType",
    "FreedSlot",
    "Slot",
    "appointment_cancel",
    "appointment_create",
    "appointment_reschedule",
    "appointment_row",
    "appointment_set_status",
    "appointments_between",
    "appointments_export",
    "availability",
    "first_clash",
    "on_completed",
    "on_slot_freed",
    "outcomes_between",
]
