"""Connections: consent binds an app to one practice for one person; disconnect ends every token at once and
archives the webhook endpoints the connection created."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from apps.oauth.models import AccessToken, ClientProfile, Connection, Grant, RefreshToken

LAST_USED_RESOLUTION = timedelta(minutes=1)


def still_connected(connection_ids: set) -> set:
    """Of these connection ids, those not disconnected (the webhooks app's hourly sweep asks)."""
    return set(
        Connection.objects.unscoped()
        .filter(pk__in=connection_ids, revoked_at__isnull=True)
        .values_list("pk", flat=True)
    )


def connect(*, user, application, organization, scopes: list[str]) -> Connection:
    """At consent: the person's live connection of this app to this practice (its scopes become the new consent),
    or a new one. The practice of a connection never changes."""
    scope_text = " ".join(sorted(set(scopes)))
    with transaction.atomic():
        connection = (
            Connection.objects.for_org(organization)
            .select_for_update()
            .filter(user=user, application=application, revoked_at__isnull=True)
            .first()
        )
        if connection is None:
            connection = Connection.objects.create(
                organization=organization, user=user, application=application, scopes=scope_text
            )
        elif connection.scopes != scope_text:
            connection.scopes = scope_text
            connection.save(update_fields=["scopes", "updated_at"])
        # The first approval keeps a dynamically registered client from the 24-hour cleanup.
        profile, _ = ClientProfile.objects.get_or_create(application=application)
        if profile.approved_at is None:
            ClientProfile.objects.filter(pk=profile.pk).update(approved_at=timezone.now())
    return connection


def disconnect(connection: Connection) -> None:
    """Revoke the connection and every token it holds; its webhook endpoints are archived (their queued
    deliveries fail). Takes effect on the connection's next request."""
    from apps.webhooks.public import endpoints_archive_for_connection

    now = timezone.now()
    with transaction.atomic():
        updated = (
            Connection.objects.unscoped()
            .filter(pk=connection.pk, revoked_at__isnull=True)
            .update(revoked_at=now, updated_at=now)
        )
        RefreshToken.objects.filter(connection_id=connection.pk, revoked__isnull=True).update(revoked=now)
        AccessToken.objects.filter(connection_id=connection.pk).delete()
        if updated:
            endpoints_archive_for_connection(organization=connection.organization, connection_id=connection.pk)
    connection.revoked_at = connection.revoked_at or now


def revoke_issued_from_code(grant_id) -> None:
    """A replayed authorization code (RFC 6749 §4.1.2): revoke every refresh and access token descending from it,
    together. The connection and its other tokens (other consents of the same app) stay."""
    if grant_id is None:
        return
    now = timezone.now()
    with transaction.atomic():
        RefreshToken.objects.filter(grant_id=grant_id, revoked__isnull=True).update(revoked=now, updated=now)
        AccessToken.objects.filter(grant_id=grant_id).delete()


# An exchanged code is kept while anything it bought could still work; past that a replay has nothing to revoke.
EXCHANGED_CODE_RETENTION = timedelta(days=31)  # a refresh token's 30 days, and a day's margin
UNUSED_CODE_RETENTION = timedelta(days=1)  # a code never exchanged is dead 60 s after it was issued


def purge_spent_codes(now=None) -> int:
    """Delete authorization codes that can no longer matter: never exchanged and expired a day ago, or exchanged over
    31 days ago with no live token descending from them (a refresh keeps the lineage, and with it the code, alive).
    Returns how many were deleted."""
    now = now or timezone.now()
    refresh_lifetime = timedelta(seconds=settings.OAUTH2_PROVIDER["REFRESH_TOKEN_EXPIRE_SECONDS"])
    live_access = AccessToken.objects.filter(grant_id=OuterRef("pk"), expires__gt=now)
    live_refresh = RefreshToken.objects.filter(
        grant_id=OuterRef("pk"), revoked__isnull=True, created__gt=now - refresh_lifetime
    )
    spent = Grant.objects.filter(
        Q(exchanged_at__isnull=True, expires__lt=now - UNUSED_CODE_RETENTION)
        | Q(exchanged_at__lt=now - EXCHANGED_CODE_RETENTION)
    ).exclude(Exists(live_access) | Exists(live_refresh))
    _, per_model = spent.delete()
    return per_model.get(Grant._meta.label, 0)


def touch(connection_id, *, last_used_at=None) -> None:
    """Record use at most once a minute: one conditional UPDATE, skipped when the connection's `last_used_at` (read
    with its token in this request) is under a minute old."""
    now = timezone.now()
    if last_used_at is not None and now - last_used_at < LAST_USED_RESOLUTION:
        return
    Connection.objects.unscoped().filter(pk=connection_id).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    ).update(last_used_at=now)
