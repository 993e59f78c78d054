from apps.core.errors import ApiError, ServiceUnavailable


class CallbackSignatureInvalid(ApiError):
    status_code = 401
    code = "CALLBACK_SIGNATURE_INVALID"
    message = "The telephony signature is missing, stale or does not match this connection's public key."


class CallbackNotStored(ServiceUnavailable):
    code = "CALLBACK_NOT_STORED"
    message = "The callback could not be stored or parked; the provider should retry it."
    retry_after = 30


class DialerNotConnected(ApiError):
    status_code = 409
    code = "DIALER_NOT_CONNECTED"
    message = "The practice has no active telephony connection; connect one under /dialer/connections first."


class DialerConnectionAmbiguous(ApiError):
    status_code = 400
    code = "VALIDATION_ERROR"
    message = "connectionId: the practice has several telephony connections; name one."

    def __init__(self):
        super().__init__(details={"fields": {"connectionId": ["is required: the practice has several connections"]}})


class DialerNotConfigured(ApiError):
    status_code = 409
    code = "DIALER_NOT_CONFIGURED"
    message = "The connection has no Call Control application id (callControlAppId); set it to place calls."


class DialerNoNumber(ApiError):
    status_code = 409
    code = "DIALER_NO_NUMBER"
    message = "The practice has no active phone number to call from."


class NumberAlreadyConnected(ApiError):
    status_code = 409
    code = "DIALER_NUMBER_ALREADY_CONNECTED"
    message = "This number is already one of the practice's numbers."


class NumberNotReleasable(ApiError):
    status_code = 409
    code = "DIALER_NUMBER_NOT_RELEASABLE"
    message = "This number is not active or pending, so there is nothing to release."


class ProviderRefusedRequest(ApiError):
    status_code = 409
    code = "DIALER_PROVIDER_REFUSED"
    message = "The telephony provider refused the request."

    def __init__(self, provider_code: str):
        super().__init__(details={"providerCode": provider_code})


class ProviderUnavailableError(ServiceUnavailable):
    code = "DIALER_PROVIDER_UNAVAILABLE"
    message = "The telephony provider could not be reached; try again shortly."
    retry_after = 30


class RecordingNotReady(ApiError):
    status_code = 409
    code = "RECORDING_NOT_READY"
    message = "The recording is still being copied from the provider; try again shortly."


class RecordingUnavailable(ApiError):
    status_code = 410
    code = "RECORDING_UNAVAILABLE"
    message = "The recording could not be copied from the provider and is no longer available."


class RecordingStorageUnavailable(ServiceUnavailable):
    code = "RECORDING_STORAGE_UNAVAILABLE"
    message = "The recording store cannot be reached; retry shortly."


class ParkedEventDecided(ApiError):
    status_code = 409
    code = "DIALER_EVENT_ALREADY_DECIDED"
    message = "This parked event was already replayed or dismissed."


class ParkedEventStillUnrouted(ApiError):
    status_code = 409
    code = "DIALER_EVENT_STILL_UNROUTED"
    message = "The event's number (or porting order) is still not connected here; connect it before replaying."
