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


class SendRefused(ApiError):
    """A message that may not be sent: `code` is the reason (the same codes a failed message carries)."""

    status_code = 409
    REASONS = {
        "NO_ADDRESS": "The patient has no usable number or address for this channel.",
        "CONTACT_BLOCKED": "This contact asked not to be messaged on this channel (STOP); they can text START.",
        "ADDRESS_SUPPRESSED": "This e-mail address bounced or complained and is suppressed.",
        "OPTED_OUT": "The patient opted out of marketing on this channel.",
        "NO_CONSENT": "The patient has not given marketing consent for this channel.",
        "PATIENT_NOT_FOUND": "No such patient.",
        "PATIENT_INACTIVE": "The patient is recorded as deceased (or archived, for marketing).",
        "CONNECTION_UNAVAILABLE": "The channel connection is disconnected.",
        "OUTSIDE_CARE_WINDOW": "More than 24 hours since the patient last wrote on this channel: only an approved "
        "template may be sent (POST /templates/{id}/send).",
        "OUTSIDE_REPLY_WINDOW": "More than 48 hours since the person last wrote on the short-video platform: it "
        "accepts no message until they write again.",
    }

    def __init__(self, reason: str):
        super().__init__(
            self.REASONS.get(reason, "The message cannot be sent."), code=reason, details={"reason": reason}
        )


class ConnectStateInvalid(ApiError):
    status_code = 400
    code = "CONNECT_STATE_INVALID"
    message = "The connection attempt is unknown, expired or already used."


class ShortVideoNotConfigured(ApiError):
    status_code = 409
    code = "SHORT_VIDEO_NOT_CONFIGURED"
    message = "This deployment has no short-video platform app (client key); short-video messages cannot be connected."


class ShortVideoPlatformUnavailable(ServiceUnavailable):
    code = "SHORT_VIDEO_PLATFORM_UNAVAILABLE"
    message = "The short-video platform did not answer; nothing was connected. Start again shortly."
    retry_after = 30
