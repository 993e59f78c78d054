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
