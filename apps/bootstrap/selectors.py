"""GET /bootstrap: what a client needs at start, read in a handful of queries.

The practice, the person, their role and its permissions, their workspaces (the same derivation as /auth/me), which
areas the practice has configured (one query: each area offers an EXISTS expression through its public module), the
limits the service really enforces (from settings and the constants the enforcing code reads), and how many agreement
versions the practice has still to accept (one query)."""

import hashlib
import json

from django.conf import settings
from django.db.models import Value

from apps.accounts import roles
from apps.accounts.models import Membership, Organization, User
from apps.accounts.selectors import effective_workspaces
from apps.accounts.services.media import MAX_IMAGE_BYTES
from apps.agreements.public import pending_agreements
from apps.conversations.public import email_channel_active
from apps.core.pagination import NewestFirstCursorPagination
from apps.dialer.public import dialer_connected
from apps.leadads.public import lead_ads_connected
from apps.plans.public import practice_currency
from apps.reputation.public import review_source_active
from apps.sites.public import website_configured
from apps.voice.public import ai_voice_enabled
from apps.webhooks.public import MAX_ENDPOINTS
from apps.widget.public import widget_active


def features(organization: Organization) -> dict[str, bool]:
    """Which areas the practice has configured and can use now, in one query."""
    configured = (
        Organization.objects.filter(pk=organization.pk)
        .values(
            lead_ads=lead_ads_connected(organization),
            website=website_configured(organization),
            widget=widget_active(organization),
            dialer=dialer_connected(organization),
            ai_voice=ai_voice_enabled(organization),
            reputation=review_source_active(organization),
            email_domains=email_channel_active(organization),
            clinical_workspace=Value(organization.clinical_workspace_available),
        )
        .get()
    )
    return {name: bool(value) for name, value in configured.items()}


def limits() -> dict:
    """Limits the service enforces, read from where the enforcing code reads them."""
    burst, refill = settings.SVC_API_KEY_BUCKET
    return {
        "api_credential_requests": {"burst": burst, "refill_per_second": refill},
        "request_body_bytes": settings.SVC_MAX_BODY_BYTES,
        "json_body_bytes": settings.SVC_DEFAULT_JSON_BODY_BYTES,
        "image_upload_bytes": MAX_IMAGE_BYTES,
        "webhook_endpoints": MAX_ENDPOINTS,
        "mcp_reply_bytes": settings.SVC_MCP_REPLY_LIMIT,
        "feed_page_size": NewestFirstCursorPagination.max_page_size,
    }


def bootstrap(*, membership: Membership, user: User) -> dict:
    organization = membership.organization
    workspaces, default_workspace = effective_workspaces(membership)
    return {
        "practice": {
            "id": str(organization.id),
            "name": organization.name,
            "country": organization.country,
            "region": organization.region,
            "timezone": organization.timezone,
            "currency": practice_currency(organization),
        },
        "user": {"id": str(user.id), "name": user.name, "email": user.email},
        "role": membership.role,
        "permissions": sorted(roles.ROLE_PERMISSIONS.get(membership.role, ())),
        "workspaces": workspaces,
        "default_workspace": default_workspace,
        "clinical_workspace_available": organization.clinical_workspace_available,
        "features": features(organization),
        "limits": limits(),
        "pending_agreements": len(pending_agreements(organization)),
    }


def body_etag(body: dict) -> str:
    """A strong ETag: the quoted SHA-256 of the body's canonical JSON (any change to what it says changes it)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return '"' + hashlib.sha256(canonical.encode()).hexdigest() + '"'
