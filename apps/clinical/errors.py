"""Errors of the clinical workspace hub (all in the {code, message, details} envelope)."""

from apps.core.errors import ApiError, PayloadTooLarge, ServiceUnavailable, ValidationFailed


class PractitionerAlreadyLinked(ApiError):
    status_code = 409
    code = "PRACTITIONER_ALREADY_LINKED"
    message = "This practitioner profile is already linked to a member account; unlink it first."


class MemberAlreadyLinked(ApiError):
    status_code = 409
    code = "MEMBER_ALREADY_LINKED"
    message = "This member account is already linked to another practitioner profile; unlink that one first."


class PractitionerNotLinked(ApiError):
    status_code = 404
    code = "NOT_FOUND"
    message = "This practitioner profile is not linked to a member account."


class ChairNameTaken(ApiError):
    status_code = 409
    code = "CHAIR_NAME_TAKEN"
    message = "The location already has a chair with this name."


class ChairInUse(ApiError):
    status_code = 409
    code = "CHAIR_IN_USE"
    message = "The chair has upcoming appointments; move them to another chair (or deactivate the chair) first."


class ChairInactive(ValidationFailed):
    def __init__(self, field: str = "chairId"):
        super().__init__(f"{field}: the chair is inactive", details={"fields": {field: ["the chair is inactive"]}})


class ChairLocationMismatch(ValidationFailed):
    def __init__(self):
        problem = "the chair belongs to another location than the appointment's"
        super().__init__(f"chairId: {problem}", details={"fields": {"chairId": [problem]}})


class DocumentTooLarge(PayloadTooLarge):
    code = "CLINICAL_DOCUMENT_TOO_LARGE"
    message = "The document is larger than clinical storage accepts."


class DocumentTypeRefused(ValidationFailed):
    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}", details={"fields": {field: [problem]}})


class DocumentStorageUnavailable(ServiceUnavailable):
    code = "CLINICAL_STORAGE_UNAVAILABLE"
    message = "The document could not be written to (or read from) the media storage; try again."
