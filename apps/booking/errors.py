from apps.core.errors import ApiError, NotFound, ServiceUnavailable


class BookingNotFound(NotFound):
    code = "NOT_FOUND"
    message = "No such booking page."


class SlotUnavailable(ApiError):
    status_code = 409
    code = "BOOKING_SLOT_UNAVAILABLE"
    message = "That time is no longer available; choose another slot."


class HoldExpired(ApiError):
    status_code = 409
    code = "BOOKING_HOLD_EXPIRED"
    message = "The hold on this slot has expired; choose a slot again."


class ChangeNotAllowed(ApiError):
    status_code = 409
    code = "BOOKING_CHANGE_NOT_ALLOWED"
    message = "This appointment can no longer be changed online; please contact the practice."


class NotStored(ServiceUnavailable):
    code = "BOOKING_NOT_STORED"
    message = "The request could not be stored; retry shortly."
    retry_after = 30
