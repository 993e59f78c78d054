"""The booking app's interface to other apps: import from here, never from its other modules or its api/.

Nothing is used by other areas yet; the booking page model is exported for reports and embeds to come.
"""

from apps.booking.models import BookingHold, BookingPage

__all__ = ["BookingHold", "BookingPage"]
