"""Error codes of clinical records (ApiError subclasses: status, code, message)."""

from apps.core.errors import ApiError


class NoteAlreadySigned(ApiError):
    status_code = 409
    code = "NOTE_ALREADY_SIGNED"
    message = "This is signed already: a signed note or amendment is sealed (correct it with an amendment)."


class NoteSignNotAllowed(ApiError):
    status_code = 403
    code = "NOTE_SIGN_NOT_ALLOWED"
    message = "Only the author may sign, and only while their account is linked to a practitioner profile."


class QuestionnaireInvalid(ApiError):
    status_code = 400
    code = "VALIDATION_ERROR"

    def __init__(self, problem: str):
        field, _, text = problem.partition(": ")
        super().__init__(f"{field}: {text}", details={"fields": {field: [text]}})


class FormNotSent(ApiError):
    status_code = 409
    code = "FORM_NOT_SENT"
    message = "The form could not be sent to the patient on that channel; nothing was kept."

    def __init__(self, reason: str):
        super().__init__(details={"reason": reason})


class FormClosed(ApiError):
    status_code = 409
    code = "FORM_CLOSED"
    message = "This form is completed, revoked or expired."


class FormNotFound(ApiError):
    status_code = 404
    code = "NOT_FOUND"
    message = "This form link is unknown, used, revoked or expired."
