"""The audit app's error codes."""

from apps.core.errors import ApiError


class AuditExportTooLarge(ApiError):
    status_code = 400
    code = "EXPORT_TOO_LARGE"
    message = "The export would hold more rows than one download may; narrow the filters (from, to, …)."
