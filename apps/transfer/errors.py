"""Error codes of data transfer and the practice archive."""

from apps.core.errors import ApiError


class ImportFileInvalid(ApiError):
    status_code = 400
    code = "IMPORT_FILE_INVALID"
    message = "The file cannot be imported."

    def __init__(self, problem: str):
        super().__init__(f"file: {problem}", details={"fields": {"file": [problem]}})


class ImportFileTooLarge(ApiError):
    status_code = 413
    code = "IMPORT_FILE_TOO_LARGE"
    message = "The file is larger than an import accepts."

    def __init__(self, max_bytes: int):
        super().__init__(details={"maxBytes": max_bytes, "field": "file"})


class ImportStateConflict(ApiError):
    status_code = 409
    code = "IMPORT_STATE_CONFLICT"
    message = "The import's status does not allow this."

    def __init__(self, status: str, message: str | None = None):
        super().__init__(message, details={"status": status})


class ExportNotReady(ApiError):
    status_code = 409
    code = "EXPORT_NOT_READY"
    message = "The export is not ready to download."

    def __init__(self, status: str):
        super().__init__(details={"status": status})


class ExportLinkInvalid(ApiError):
    status_code = 403
    code = "EXPORT_LINK_INVALID"
    message = "The download link is not valid for this export."


class ExportLinkExpired(ApiError):
    status_code = 410
    code = "EXPORT_LINK_EXPIRED"
    message = "The download link has expired; read the export again for a new one."


class ExportFileGone(ApiError):
    status_code = 410
    code = "EXPORT_FILE_EXPIRED"
    message = "The export's file was deleted at the end of its retention; request a new export."


class ArchiveInProgress(ApiError):
    status_code = 409
    code = "PRACTICE_ARCHIVE_IN_PROGRESS"
    message = "The practice's closing is already scheduled."


class ArchiveNotScheduled(ApiError):
    status_code = 409
    code = "PRACTICE_ARCHIVE_NOT_SCHEDULED"
    message = "No closing is scheduled (or it is already under way)."
