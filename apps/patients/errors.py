from apps.core.errors import ApiError


class PatientMerged(ApiError):
    status_code = 409
    code = "PATIENT_MERGED"
    message = "This patient was merged into another record; act on the survivor."

    def __init__(self, merged_into_id):
        super().__init__(details={"mergedIntoPatientId": str(merged_into_id)})


class ArchiveReasonRequired(ApiError):
    status_code = 409
    code = "ARCHIVE_REASON_REQUIRED"
    message = "A lead with fewer than five contact attempts can only be archived with a reason."


class ExportTooLarge(ApiError):
    status_code = 400
    code = "EXPORT_TOO_LARGE"
    message = "The export would hold more than 10000 rows; narrow the filters or pick ids."


class PatientArchived(ApiError):
    status_code = 409
    code = "PATIENT_ARCHIVED"
    message = "This patient is archived; unarchive it first."


class MergeNotAllowed(ApiError):
    status_code = 409
    code = "MERGE_NOT_ALLOWED"
    message = "These records cannot be merged."


class TagNameTaken(ApiError):
    status_code = 409
    code = "TAG_NAME_TAKEN"
    message = "A tag with this name already exists in the practice."


class SavedViewNameTaken(ApiError):
    status_code = 409
    code = "SAVED_VIEW_NAME_TAKEN"
    message = "You already have a saved view with this name."
