from apps.core.errors import ApiError, NotFound, ServiceUnavailable


class ReviewLinkNotFound(NotFound):
    """Unknown, expired, tampered and erased tokens: all the same 404."""

    code = "NOT_FOUND"
    message = "This review link does not exist or has expired."


class ReputationNotStored(ServiceUnavailable):
    code = "REPUTATION_NOT_STORED"
    message = "Your answer could not be stored; send it again shortly."
    retry_after = 30


class ProviderUnavailableError(ServiceUnavailable):
    code = "REPUTATION_PROVIDER_UNAVAILABLE"
    message = "The review platform did not answer; try again shortly."
    retry_after = 60


class SourceRefused(ApiError):
    status_code = 409
    code = "REPUTATION_SOURCE_REFUSED"
    message = "The review platform refused the request (check the source's credentials and ids)."

    def __init__(self, provider_code: str):
        super().__init__(details={"providerCode": provider_code})


class SourcePaused(ApiError):
    status_code = 409
    code = "REPUTATION_SOURCE_PAUSED"
    message = "The review source is paused."


class NoReviewSource(ApiError):
    status_code = 409
    code = "REPUTATION_NO_REVIEW_SOURCE"
    message = "The location has no active review source: connect one before asking patients for reviews."


class RequestNotSent(ApiError):
    """The sending pipeline refused the message up front (no consent, blocked contact, no address, …)."""

    status_code = 409
    code = "REVIEW_REQUEST_NOT_SENT"
    message = "The review request cannot be sent to this patient."

    def __init__(self, reason: str):
        super().__init__(f"The review request cannot be sent to this patient ({reason}).", details={"reason": reason})


class ReplyPending(ApiError):
    status_code = 409
    code = "REPUTATION_REPLY_PENDING"
    message = "A reply to this review is still being published."


class NotInvited(ApiError):
    status_code = 409
    code = "REPUTATION_REVIEW_NOT_INVITED"
    message = "This link was not pointed at the public review site: rate the visit first."
