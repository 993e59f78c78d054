"""Error codes of recalls and the waitlist."""

from apps.core.errors import ApiError


class RecallTransitionNotAllowed(ApiError):
    status_code = 409
    code = "RECALL_TRANSITION_NOT_ALLOWED"
    message = "The recall's status does not allow this change."

    def __init__(self, *, status: str, target: str):
        super().__init__(f"A {status} recall cannot become {target}.", details={"status": status, "requested": target})


class RecallTypeNameTaken(ApiError):
    status_code = 409
    code = "RECALL_TYPE_NAME_TAKEN"
    message = "The practice already has a recall type of that name."


class WaitlistEntryClosed(ApiError):
    status_code = 409
    code = "WAITLIST_ENTRY_CLOSED"
    message = "A booked or removed waitlist entry cannot be changed."

    def __init__(self, status: str):
        super().__init__(details={"status": status})


class OfferClosed(ApiError):
    status_code = 409
    code = "WAITLIST_OFFER_CLOSED"
    message = "The offer is no longer open (accepted, declined, expired or closed)."

    def __init__(self, status: str):
        super().__init__(details={"status": status})
