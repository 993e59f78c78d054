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


class InvalidPassword(ApiError):
    status_code = 400
    code = "INVALID_PASSWORD"
    message = "The password is wrong."

    def __init__(self):
        super().__init__(details={"fields": {"password": ["is wrong"]}})


class InvalidTwoFactorCode(ApiError):
    status_code = 400
    code = "INVALID_TWO_FACTOR_CODE"
    message = "The code is wrong or has already been used."


class TwoFactorSetupNotFound(ApiError):
    status_code = 409
    code = "TWO_FACTOR_SETUP_NOT_FOUND"
    message = "There is no pending authenticator setup (it expired or was cancelled); start the setup again."


class TwoFactorNotEnabled(ApiError):
    status_code = 409
    code = "TWO_FACTOR_NOT_ENABLED"
    message = "Two-factor authentication is not enabled for this account."


class TwoFactorChallengeExpired(ApiError):
    status_code = 401
    code = "TWO_FACTOR_CHALLENGE_EXPIRED"
    message = "The second-factor step has expired or was used up; sign in again with your password."


class FreshAuthenticationRequired(ApiError):
    status_code = 403
    code = "FRESH_AUTHENTICATION_REQUIRED"
    message = "Confirm your password again (POST /user/reauthenticate) and send the token in X-Service-Act-Evidence."


class InvitationNotFound(ApiError):
    status_code = 404
    code = "INVITATION_NOT_FOUND"
    message = "No such invitation, or it has expired or was withdrawn."


class InvitationAlreadyAnswered(ApiError):
    status_code = 409
    code = "INVITATION_ALREADY_ANSWERED"
    message = "This invitation has already been accepted or rejected."


class InvitationEmailMismatch(ApiError):
    status_code = 403
    code = "INVITATION_EMAIL_MISMATCH"
    message = "This invitation was sent to another e-mail address; sign in with that address to accept it."


class SignInRequired(ApiError):
    status_code = 401
    code = "SIGN_IN_REQUIRED"
    message = "An account with this e-mail address exists: sign in first, then accept the invitation."


class OwnerAlreadyMember(ApiError):
    status_code = 409
    code = "OWNER_ALREADY_MEMBER"
    message = "This e-mail address belongs to a member of the practice."


class WorkspaceUnavailable(ApiError):
    status_code = 409
    code = "WORKSPACE_UNAVAILABLE"
    message = "The member's role does not open this workspace."


class LastOwner(ApiError):
    status_code = 409
    code = "LAST_OWNER"
    message = "A practice keeps at least one owner."


class InvalidResetToken(ApiError):
    status_code = 400
    code = "INVALID_RESET_TOKEN"
    message = "This password reset link is wrong, already used or expired; ask for a new one."


class InvalidVerificationToken(ApiError):
    status_code = 400
    code = "INVALID_VERIFICATION_TOKEN"
    message = "This verification link is wrong, already used or expired; ask for a new one."
