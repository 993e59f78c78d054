"""Writes of the websites area: sites and their forms, site keys, form-discovery reports and their review."""

import json
import secrets
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from apps.capture.public import CaptureForm
from apps.sites.domains import page_digest
from apps.sites.errors import SiteArchived
from apps.sites.models import FormDiscovery, Website, WebsiteForm

SITE_KEY_PREFIX = "site_"
# A site's review list holds at most this many discoveries; past it, reports only refresh the ones it has (a page
# that invents form keys on every visit must not grow the table without end).
MAX_DISCOVERIES_PER_SITE = 2000


def new_site_key() -> str:
    return SITE_KEY_PREFIX + secrets.token_urlsafe(24)


def _set_forms(website: Website, forms: list[CaptureForm]) -> None:
    """The site's forms become exactly these (set-based: one delete, one insert)."""
    wanted = {form.id for form in forms}
    WebsiteForm.objects.for_org(website.organization_id).filter(website=website).exclude(form_id__in=wanted).delete()
    WebsiteForm.objects.bulk_create(
        [WebsiteForm(organization_id=website.organization_id, website=website, form_id=form_id) for form_id in wanted],
        ignore_conflicts=True,
    )


@transaction.atomic
def website_create(*, organization, user, data: dict[str, Any]) -> Website:
    forms = data.pop("forms", [])
    website = Website.objects.create(organization=organization, created_by=user, site_key=new_site_key(), **data)
    _set_forms(website, forms)
    return website


def _writable(*, organization, website: Website) -> Website:
    website = Website.objects.for_org(organization).select_for_update().get(id=website.id)
    if website.status == Website.Status.ARCHIVED:
        raise SiteArchived()
    return website


@transaction.atomic
def website_update(*, organization, website: Website, data: dict[str, Any]) -> Website:
    website = _writable(organization=organization, website=website)
    forms = data.pop("forms", None)
    for key, value in data.items():
        setattr(website, key, value)
    website.save()
    if forms is not None:
        _set_forms(website, forms)
    return website


@transaction.atomic
def website_archive(*, organization, website: Website) -> Website:
    """Final: the site key stops answering (404) at once; the review list stays readable."""
    website = _writable(organization=organization, website=website)
    website.status = Website.Status.ARCHIVED
    website.archived_at = timezone.now()
    website.save(update_fields=["status", "archived_at", "updated_at"])
    return website


@transaction.atomic
def website_regenerate_key(*, organization, website: Website) -> Website:
    """A new site key; the old one stops answering at once (the site's pages must be updated)."""
    website = _writable(organization=organization, website=website)
    website.site_key = new_site_key()
    website.save(update_fields=["site_key", "updated_at"])
    return website


# --- form discovery -------------------------------------------------------------------------------------------------

_UPSERT = """
INSERT INTO sites_formdiscovery
    (id, organization_id, created_at, updated_at, website_id, page_url, page_digest, form_key, fields, status,
     first_seen_at, last_seen_at, times_seen)
SELECT gen_random_uuid(), %(organization_id)s, %(now)s, %(now)s, %(website_id)s, %(page_url)s, %(page_digest)s,
       r.form_key, r.fields, 'new', %(now)s, %(now)s, 1
FROM jsonb_to_recordset(%(rows)s::jsonb) AS r(form_key text, fields jsonb)
ON CONFLICT (organization_id, website_id, page_digest, form_key) DO UPDATE
SET last_seen_at = EXCLUDED.last_seen_at,
    updated_at = EXCLUDED.updated_at,
    fields = EXCLUDED.fields,
    times_seen = sites_formdiscovery.times_seen + 1
"""


def discovery_record(*, website: Website, page_url: str, forms: list[dict[str, Any]]) -> int:
    """Record a page's report: one row per form key (the last of repeated keys wins), inserted or refreshed in one
    statement (concurrent reports of the same page cannot duplicate). Returns how many forms were recorded."""
    by_key = {form["form_key"]: form["fields"] for form in forms}
    if not by_key:
        return 0
    digest = page_digest(page_url)
    scoped = FormDiscovery.objects.for_org(website.organization_id).filter(website=website)
    known = set(scoped.filter(page_digest=digest, form_key__in=list(by_key)).values_list("form_key", flat=True))
    unknown = [key for key in by_key if key not in known]
    if unknown:
        room = max(0, MAX_DISCOVERIES_PER_SITE - scoped.count())
        for key in unknown[room:]:
            del by_key[key]
    if not by_key:
        return 0
    rows = [{"form_key": key, "fields": fields} for key, fields in by_key.items()]
    with connection.cursor() as cursor:
        cursor.execute(
            _UPSERT,
            {
                "organization_id": website.organization_id,
                "website_id": website.id,
                "page_url": page_url,
                "page_digest": digest,
                "now": timezone.now(),
                "rows": json.dumps(rows),
            },
        )
        return cursor.rowcount


@transaction.atomic
def discovery_link(*, organization, website: Website, discovery: FormDiscovery, form: CaptureForm) -> FormDiscovery:
    """The discovered form is this capture form: the discovery is marked linked and the form joins the site."""
    website = _writable(organization=organization, website=website)
    discovery = FormDiscovery.objects.for_org(organization).select_for_update().get(id=discovery.id)
    discovery.status = FormDiscovery.Status.LINKED
    discovery.linked_form = form
    discovery.save(update_fields=["status", "linked_form", "updated_at"])
    WebsiteForm.objects.bulk_create(
        [WebsiteForm(organization_id=organization.id, website=website, form=form)], ignore_conflicts=True
    )
    return discovery


@transaction.atomic
def discovery_dismiss(*, organization, website: Website, discovery: FormDiscovery) -> FormDiscovery:
    """Not a lead form (a search box, a newsletter sign-up…): off the review list. The site's forms are unchanged."""
    _writable(organization=organization, website=website)
    discovery = FormDiscovery.objects.for_org(organization).select_for_update().get(id=discovery.id)
    discovery.status = FormDiscovery.Status.DISMISSED
    discovery.linked_form = None
    discovery.save(update_fields=["status", "linked_form", "updated_at"])
    return discovery
