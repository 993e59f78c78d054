from apps.core.errors import ApiError, PermissionDenied


class PracticeNotFound(ApiError):
    """An agency call naming a practice the agency did not create or no longer links (MCP's practice argument, or
    the id in /partner/practices/{organizationId}/…)."""

    status_code = 404
    code = "PRACTICE_NOT_FOUND"
    message = "No such practice among the practices this agency created and still links."


class PracticeOwnerJoined(ApiError):
    status_code = 409
    code = "PRACTICE_OWNER_JOINED"
    message = "The practice owner has joined; the practice manages its own invitations now."


class AgencyRequired(PermissionDenied):
    """A 403 in the ordinary permission envelope: /partner/* serves members of a partner agency only."""

    message = "Only members of a partner agency can manage partner practices."
