from apps.core.errors import ApiError


class EmailTaken(ApiError):
    status_code = 409
    code = "EMAIL_TAKEN"
    message = "An account with this e-mail address already exists."


class InvalidCredentials(ApiError):
    status_code = 401
    code = "INVALID_CREDENTIALS"
    message = "The e-mail address or password is wrong."


class AlreadyMember(ApiError):
    status_code = 409
    code = "ALREADY_MEMBER"
    message = "This person is already a member of the practice."
