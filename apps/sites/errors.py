from apps.core.errors import ApiError, NotFound


class SiteNotFound(NotFound):
    """Unknown and archived site keys: one answer for both."""

    message = "No such site."


class SiteArchived(ApiError):
    status_code = 409
    code = "SITE_ARCHIVED"
    message = "The website is archived."


class SiteDomainNotAllowed(ApiError):
    status_code = 403
    code = "SITE_DOMAIN_NOT_ALLOWED"
    message = "The page's host (or the Origin) is not one of the site's allowed domains."
