from apps.core.errors import ApiError, NotFound


class CaptureNotFound(NotFound):
    """Unknown, paused and archived tokens: one answer for all, so a token's state cannot be probed."""

    message = "No such capture endpoint."


class DeliveryConflict(ApiError):
    status_code = 409
    code = "CAPTURE_DELIVERY_CONFLICT"
    message = "This delivery id was already used with different content; use a new id for a new submission."


class SignatureInvalid(ApiError):
    status_code = 401
    code = "CAPTURE_SIGNATURE_INVALID"
    message = "The signature does not match the body under any valid signing secret."


class CaptureFormArchived(ApiError):
    status_code = 409
    code = "CAPTURE_FORM_ARCHIVED"
    message = "The capture form is archived."


class SigningNotEnabled(ApiError):
    status_code = 409
    code = "CAPTURE_SIGNING_NOT_ENABLED"
    message = "Signing is not enabled on this capture form."


class NoPreviousSecret(ApiError):
    status_code = 409
    code = "CAPTURE_NO_PREVIOUS_SECRET"
    message = "There is no previous signing secret in its overlap period."


class ReviewItemClosed(ApiError):
    status_code = 409
    code = "INTAKE_REVIEW_ITEM_CLOSED"
    message = "The review item is already resolved or dismissed."
