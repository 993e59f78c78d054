"""The connected PMS's error codes."""

from apps.core.errors import ApiError, ServiceUnavailable


class PmsSignatureInvalid(ApiError):
    status_code = 401
    code = "PMS_SIGNATURE_INVALID"
    message = "The callback's signature headers are missing or do not match this connection's signing secret."


class PmsTimestampOutOfRange(ApiError):
    status_code = 401
    code = "PMS_TIMESTAMP_OUT_OF_RANGE"
    message = "X-Service-Timestamp is more than five minutes from now."


class PmsCallbackNotStored(ServiceUnavailable):
    code = "PMS_CALLBACK_NOT_STORED"
    message = "The callback could not be stored; the PMS should retry it."
    retry_after = 30


class PmsAlreadyConnected(ApiError):
    status_code = 409
    code = "PMS_ALREADY_CONNECTED"
    message = "The practice already has a connected PMS; disconnect it first."


class PmsConnectionDisconnected(ApiError):
    status_code = 409
    code = "PMS_CONNECTION_DISCONNECTED"
    message = "The PMS connection is disconnected."


class PmsImportCompleted(ApiError):
    status_code = 409
    code = "PMS_IMPORT_COMPLETED"
    message = "This import has completed; start a new one from the connection."


class PmsReviewResolved(ApiError):
    status_code = 409
    code = "PMS_REVIEW_RESOLVED"
    message = "This review has already been resolved."


class PmsReviewStale(ApiError):
    status_code = 409
    code = "PMS_REVIEW_STALE"
    message = "A newer revision of this record has been applied since; the held change can only be kept aside."
