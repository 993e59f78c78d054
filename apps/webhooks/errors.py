from apps.core.errors import ApiError


class EndpointLimitReached(ApiError):
    status_code = 409
    code = "WEBHOOK_ENDPOINT_LIMIT_REACHED"
    message = "The practice already has 20 webhook endpoints in use; delete one first."


class EndpointNotVerified(ApiError):
    status_code = 409
    code = "WEBHOOK_ENDPOINT_NOT_VERIFIED"
    message = "Send a successful test delivery before enabling this endpoint."


class EndpointArchived(ApiError):
    status_code = 409
    code = "WEBHOOK_ENDPOINT_ARCHIVED"
    message = "This endpoint was deleted."


class NoPreviousSecret(ApiError):
    status_code = 409
    code = "WEBHOOK_NO_PREVIOUS_SECRET"
    message = "There is no previous signing secret to revoke."


class OAuthConnectionRequired(ApiError):
    status_code = 403
    code = "OAUTH_CONNECTION_REQUIRED"
    message = "Managed subscriptions are made through an OAuth connection, not an API key or session."


class OAuthConnectionRevoked(ApiError):
    status_code = 403
    code = "OAUTH_CONNECTION_REVOKED"
    message = "The OAuth connection was disconnected."


class SubscriptionConflict(ApiError):
    status_code = 409
    code = "WEBHOOK_SUBSCRIPTION_CONFLICT"
    message = "This subscriptionKey belongs to another connection or names a different url."


class EndpointPaused(ApiError):
    status_code = 409
    code = "WEBHOOK_ENDPOINT_PAUSED"
    message = "The endpoint is paused; resume it in settings."


class SubscriptionInProgress(ApiError):
    status_code = 409
    code = "WEBHOOK_SUBSCRIPTION_IN_PROGRESS"
    message = "Another request is creating this subscription; retry shortly."


class VerificationFailed(ApiError):
    status_code = 409
    code = "WEBHOOK_VERIFICATION_FAILED"
    message = "The verification probe did not come back with a 2xx echoing X-Hook-Secret."
