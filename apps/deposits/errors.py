from apps.core.errors import ApiError, ServiceUnavailable


class DepositTransitionNotAllowed(ApiError):
    status_code = 409
    code = "DEPOSIT_TRANSITION_NOT_ALLOWED"
    message = "The deposit request's status does not allow this action."

    def __init__(self, *, action: str, status: str, allowed_from: list[str]):
        super().__init__(
            f"A {status} deposit request cannot be {action}; only one that is {' or '.join(allowed_from)} can.",
            details={"action": action, "status": status, "allowedFrom": allowed_from},
        )


class PaymentsNotConnected(ApiError):
    status_code = 409
    code = "PAYMENTS_NOT_CONNECTED"
    message = "The practice has no connected payment account."


class PaymentProviderFailed(ServiceUnavailable):
    code = "PAYMENT_PROVIDER_UNAVAILABLE"
    message = "The payment provider could not be reached; try again shortly."
    retry_after = 30


class PaymentsNotConfigured(ApiError):
    status_code = 409
    code = "PAYMENTS_NOT_CONFIGURED"
    message = "Payments are not configured on this service."


class CallbackSignatureInvalid(ApiError):
    status_code = 400
    code = "CALLBACK_SIGNATURE_INVALID"
    message = "The Stripe-Signature header is missing, stale or does not match."


class CallbackNotStored(ServiceUnavailable):
    code = "CALLBACK_NOT_STORED"
    message = "The callback could not be stored; the provider should retry it."
    retry_after = 30


class ConnectStateInvalid(ApiError):
    status_code = 400
    code = "CONNECT_STATE_INVALID"
    message = "The connection attempt is unknown, expired or already used."


class CheckoutRefused(ApiError):
    status_code = 409
    code = "PAYMENT_CHECKOUT_REFUSED"
    message = "The payment provider refused to open a checkout for this deposit."
