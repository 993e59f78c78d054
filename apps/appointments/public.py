"""The appointments app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the appointment model and its active statuses, the day's appointments selector and the
renderer of an appointment row (the Today view: `appointment_row` for `.values(*APPOINTMENT_VALUES)` rows; the
serializer is the schema). Online booking (apps.booking) offers the free slots of `availability`, checks a slot with
`first_clash`, and books, cancels and reschedules through the appointment services (the exclusion constraint
settles races; the loser gets AppointmentConflict).
"""

from apps.appointments.errors import AppointmentClosed, AppointmentConflict
from apps.appointments.models import ACTIVE_STATUSES, BLOCKING_STATUSES, MAX_LENGTH, Appointment, AppointmentStatus
from apps.appointments.renderers import APPOINTMENT_VALUES, AppointmentSerializer, appointment_row
from apps.appointments.selectors import Slot, appointments_between, availability, first_clash
from apps.appointments.services import appointment_cancel, appointment_create, appointment_reschedule

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
    "Slot",
    "appointment_cancel",
    "appointment_create",
    "appointment_reschedule",
    "appointment_row",
    "appointments_between",
    "availability",
    "first_clash",
]
