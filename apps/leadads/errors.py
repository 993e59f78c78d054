from apps.core.errors import ApiError, NotFound, PayloadTooLarge, ServiceUnavailable


class SignatureInvalid(ApiError):
    status_code = 401
    code = "LEAD_AD_SIGNATURE_INVALID"
    message = "The platform's signature is missing, stale or does not match."


class GoogleKeyInvalid(ApiError):
    status_code = 401
    code = "LEAD_AD_KEY_INVALID"
    message = "The google_key is missing or is not this connection's."


class HandshakeRefused(ApiError):
    status_code = 403
    code = "HANDSHAKE_REFUSED"
    message = "The verify token is not this platform's."


class TooManyDeliveries(PayloadTooLarge):
    code = "LEAD_BODY_TOO_MANY_DELIVERIES"
    message = "A lead body carries at most 100 deliveries."

    def __init__(self, count: int):
        super().__init__(details={"deliveries": count, "maxDeliveries": 100})


class IntakeNotStored(ServiceUnavailable):
    code = "LEAD_INTAKE_NOT_STORED"
    message = "The body could not be stored; the platform should send it again."
    retry_after = 30


class RoutingTokenUnknown(NotFound):
    code = "NOT_FOUND"
    message = "No lead-ad connection answers at this address."


class TrackerNotFound(NotFound):
    code = "NOT_FOUND"
    message = "No data-deletion request has this confirmation code."


class ExternalIdAlreadyConnected(ApiError):
    status_code = 409
    code = "LEAD_AD_ALREADY_CONNECTED"
    message = "This page, ad account or advertiser is already connected to a practice; disconnect it there first."


class ConnectionDisconnected(ApiError):
    status_code = 409
    code = "LEAD_AD_CONNECTION_DISCONNECTED"
    message = "This lead-ad connection is disconnected; connect the page, account or advertiser again."


class SubmissionNotInReview(ApiError):
    status_code = 409
    code = "LEAD_AD_SUBMISSION_NOT_IN_REVIEW"
    message = "Only a submission that needs review can be resolved."


class AgencyUnavailable(ApiError):
    """Spec MCP rule 8: the same refusal the MCP server answers for an agency connection."""

    status_code = 403
    code = "AGENCY_UNAVAILABLE"
    message = "This operation is not available through an agency connection."


class ExternalIdConflict(ApiError):
    status_code = 409
    code = "LEAD_EXTERNAL_ID_CONFLICT"
    message = "This externalId was already used for a different lead."
