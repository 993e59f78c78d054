"""The websites app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (the setup status in apps.partners, GET /bootstrap): whether the practice's website is
connected.
"""

from django.db.models import Exists, OuterRef

from apps.capture.public import CaptureForm
from apps.sites.models import Website, WebsiteForm


def website_configured(organization) -> Exists:
    """As an expression: the practice has an active website with at least one allowed domain and at least one capture
    form its pages can use (linked, active, public, form submissions: what the site's public configuration lists)."""
    usable_form = WebsiteForm.objects.for_org(organization).filter(
        website=OuterRef("pk"),
        form__status=CaptureForm.Status.ACTIVE,
        form__delivery_mode=CaptureForm.Mode.PUBLIC,
        form__kind=CaptureForm.Kind.FORM_SUBMISSIONS,
    )
    return Exists(
        Website.objects.for_org(organization)
        .filter(status=Website.Status.ACTIVE)
        .exclude(allowed_domains=[])
        .filter(Exists(usable_form))
    )


__all__ = ["website_configured"]
