from apps.core.errors import ApiError, ServiceUnavailable


class AssistNotConfigured(ApiError):
    """The deployment has no AI provider configured (the default): nothing to retry until an operator sets one."""

    status_code = 409
    code = "AI_ASSIST_NOT_CONFIGURED"
    message = "AI assist is not switched on for this service."


class AssistUnavailable(ServiceUnavailable):
    """The provider timed out, failed or answered something unusable; retrying later may work."""

    code = "AI_ASSIST_UNAVAILABLE"
    message = "The AI assistant did not answer; retry shortly."
    retry_after = 10


class NothingToRead(ApiError):
    status_code = 409
    code = "AI_ASSIST_NOTHING_TO_READ"
    message = "The conversation has no message text to work from yet."
