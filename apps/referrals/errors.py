from apps.core.errors import NotFound, ServiceUnavailable


class ReferralNotFound(NotFound):
    """Unknown, rotated, tampered, wrong-kind tokens and inactive programmes: all the same 404."""

    code = "NOT_FOUND"
    message = "This referral link does not exist."


class ReferralNotStored(ServiceUnavailable):
    code = "REFERRAL_NOT_STORED"
    message = "The referral could not be stored; send it again shortly."
    retry_after = 30
