"""Error codes of automations."""

from apps.core.errors import ApiError


class RuleLimitReached(ApiError):
    status_code = 409
    code = "AUTOMATION_RULE_LIMIT"
    message = "The practice has the most automation rules it may have."

    def __init__(self, limit: int):
        super().__init__(f"A practice may have at most {limit} automation rules.", details={"limit": limit})
