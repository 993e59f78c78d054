"""Error codes of the reports area."""

from apps.core.errors import ApiError


class ReportNotFound(ApiError):
    status_code = 404
    code = "REPORT_NOT_FOUND"
    message = "No such report."


class SubscriptionNotFound(ApiError):
    status_code = 404
    code = "NOT_FOUND"
    message = "No such report subscription."


class SubscriptionLimitReached(ApiError):
    status_code = 409
    code = "REPORT_SUBSCRIPTION_LIMIT"
    message = "You already have the most report subscriptions a member may have."
