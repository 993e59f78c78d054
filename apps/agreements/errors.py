"""Error codes of the agreements area."""

from apps.core.errors import ApiError


class AgreementSuperseded(ApiError):
    status_code = 409
    code = "AGREEMENT_SUPERSEDED"
    message = "A newer version of this agreement has been published: read and accept the current one."

    def __init__(self, *, kind: str, version: str, current_id, current_version: str):
        super().__init__(
            details={
                "kind": kind,
                "version": version,
                "currentId": str(current_id),
                "currentVersion": current_version,
            }
        )


class AgreementAlreadyPublished(ApiError):
    status_code = 409
    code = "AGREEMENT_ALREADY_PUBLISHED"
    message = "This agreement version is already published; its text is frozen. Write a new version instead."
