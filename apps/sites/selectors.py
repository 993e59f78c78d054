"""Reads of the websites area."""

from django.db.models import Count, Q

from apps.capture.public import CaptureForm
from apps.sites.models import FormDiscovery, Website, WebsiteForm

MAX_SITE_KEY = 100


def website_for_key(site_key: str) -> Website | None:
    """The active website this public site key names, or None: unknown and archived look the same."""
    if not site_key or len(site_key) > MAX_SITE_KEY:
        return None
    return (
        Website.objects.unscoped()
        .select_related("organization")
        .filter(site_key=site_key, status=Website.Status.ACTIVE)
        .first()
    )


def eligible_forms(*, organization):
    """Capture forms a website may use: this practice's public form-submission forms that are not archived."""
    return (
        CaptureForm.objects.for_org(organization)
        .filter(delivery_mode=CaptureForm.Mode.PUBLIC, kind=CaptureForm.Kind.FORM_SUBMISSIONS)
        .exclude(status=CaptureForm.Status.ARCHIVED)
    )


def config_forms(website: Website) -> list[CaptureForm]:
    """The forms the site's public configuration lists: linked, active, public, form submissions."""
    return list(
        CaptureForm.objects.for_org(website.organization_id)
        .filter(
            website_links__website=website,
            status=CaptureForm.Status.ACTIVE,
            delivery_mode=CaptureForm.Mode.PUBLIC,
            kind=CaptureForm.Kind.FORM_SUBMISSIONS,
        )
        .order_by("name", "id")
    )


def websites_page(*, organization, status: str | None = None, include_archived: bool = False, limit: int, offset: int):
    websites = Website.objects.for_org(organization)
    if status:
        websites = websites.filter(status=status)
    elif not include_archived:
        websites = websites.exclude(status=Website.Status.ARCHIVED)
    total = websites.count()
    return list(websites.order_by("-created_at", "-id")[offset : offset + limit]), total


def site_summaries(*, organization, websites: list[Website]) -> dict:
    """{website id: (form ids, new discoveries)} for these websites, in two queries."""
    ids = [website.id for website in websites]
    summary = {website_id: ([], 0) for website_id in ids}
    if not ids:
        return summary
    links = (
        WebsiteForm.objects.for_org(organization)
        .filter(website_id__in=ids)
        .order_by("created_at", "id")
        .values_list("website_id", "form_id")
    )
    for website_id, form_id in links:
        summary[website_id][0].append(form_id)
    counts = (
        FormDiscovery.objects.for_org(organization)
        .filter(website_id__in=ids)
        .values("website_id")
        .annotate(new=Count("id", filter=Q(status=FormDiscovery.Status.NEW)))
    )
    for row in counts:
        summary[row["website_id"]] = (summary[row["website_id"]][0], row["new"])
    return summary


def discoveries_page(*, organization, website: Website, status: str | None = None, limit: int, offset: int):
    discoveries = FormDiscovery.objects.for_org(organization).filter(website=website)
    if status:
        discoveries = discoveries.filter(status=status)
    total = discoveries.count()
    return list(discoveries.order_by("-last_seen_at", "-id")[offset : offset + limit]), total
