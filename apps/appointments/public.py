"""The appointments app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: the appointment model and its active statuses, the day's appointments selector and the
renderer of an appointment row (the Today view).
"""

from apps.appointments.models import ACTIVE_STATUSES, Appointment
from apps.appointments.renderers import AppointmentSerializer
from apps.appointments.selectors import appointments_between

__all__ = ["ACTIVE_STATUSES", "Appointment", "AppointmentSerializer", "appointments_between"]
