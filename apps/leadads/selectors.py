"""Reads of native lead ads."""

from django.db.models import QuerySet

from apps.leadads.models import Health, LeadAdConnection, LeadAdSubmission
from apps.leadads.services import token_digest


def connections_of(*, organization, platform: str | None = None) -> QuerySet[LeadAdConnection]:
    rows = LeadAdConnection.objects.for_org(organization).order_by("-created_at", "-id")
    return rows.filter(platform=platform) if platform else rows


def submissions_of(*, organization, status: str | None = None, connection=None) -> QuerySet[LeadAdSubmission]:
    rows = LeadAdSubmission.objects.for_org(organization)
    if status:
        rows = rows.filter(status=status)
    if connection is not None:
        rows = rows.filter(connection=connection)
    return rows.order_by("-created_at", "-id")


def connection_for_routing_token(token: str) -> LeadAdConnection | None:
    """The connected connection this routing token names (any practice of this region), or None."""
    if not token or len(token) > 100 or not token.isprintable():
        return None
    return (
        LeadAdConnection.objects.unscoped()
        .filter(routing_token_digest=token_digest(token))
        .exclude(health=Health.DISCONNECTED)
        .first()
    )


def configured(organization) -> bool:
    """Whether the practice has a connected lead-ad connection (the setup status's leadAds area)."""
    return LeadAdConnection.objects.for_org(organization).exclude(health=Health.DISCONNECTED).exists()
