"""The appointments app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the appointment model and its active statuses, the day's appointments selector and the
renderer of an appointment row (the Today view: `appointment_row` for `.values(*APPOINTMENT_VALUES)` rows; the
serializer is the schema).
"""

from apps.appointments.models import ACTIVE_STATUSES, Appointment
from apps.appointments.renderers import APPOINTMENT_VALUES, AppointmentSerializer, appointment_row
from apps.appointments.selectors import appointments_between

__all__ = [
    "ACTIVE_STATUSES",
    "APPOINTMENT_VALUES",
    "Appointment",
    "AppointmentSerializer",
    "appointment_row",
    "appointments_between",
]
