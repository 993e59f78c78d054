from apps.core.errors import ApiError, ServiceUnavailable


class AddressAlreadyConnected(ApiError):
    status_code = 409
    code = "CHANNEL_ADDRESS_ALREADY_CONNECTED"
    message = "This number, address or account is already connected to a practice; disconnect it there first."


class CallbackSignatureInvalid(ApiError):
    status_code = 401
    code = "CALLBACK_SIGNATURE_INVALID"
    message = "The provider signature is missing or does not match this connection's credentials."


class CallbackNotStored(ServiceUnavailable):
    code = "CALLBACK_NOT_STORED"
    message = "The callback could not be stored; the provider should retry it."
    retry_after = 30


class AttachmentNotReady(ApiError):
    status_code = 409
    code = "ATTACHMENT_NOT_READY"
    message = "The attachment is still being copied from the provider; try again shortly."


class AttachmentUnavailable(ApiError):
    status_code = 410
    code = "ATTACHMENT_UNAVAILABLE"
    message = "The attachment could not be copied from the provider and is no longer available."


class AttachmentStorageUnavailable(ServiceUnavailable):
    code = "ATTACHMENT_STORAGE_UNAVAILABLE"
    message = "The attachment store cannot be reached; retry shortly."


class ParkedAlreadyDecided(ApiError):
    status_code = 409
    code = "PARKED_CALLBACK_ALREADY_DECIDED"
    message = "This parked callback was already replayed or dismissed."


class MessagingPlatformUnavailable(ServiceUnavailable):
    code = "MESSAGING_PLATFORM_UNAVAILABLE"
    message = "The messaging platform did not answer; the number could not be checked. Retry shortly."
    retry_after = 30
