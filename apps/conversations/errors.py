from apps.core.errors import ApiError


class AddressAlreadyConnected(ApiError):
    status_code = 409
    code = "CHANNEL_ADDRESS_ALREADY_CONNECTED"
    message = "This number, address or account is already connected to a practice; disconnect it there first."
