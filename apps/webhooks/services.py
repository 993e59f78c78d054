"""Writes of the webhook settings: endpoints and their state machine, secrets, tests, replays."""

import json
import secrets as secrets_module
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.accounts.models import Organization
from apps.core import crypto
from apps.core.credentials import connection_still_active
from apps.core.errors import ValidationFailed
from apps.webhooks import delivery as engine
from apps.webhooks import sender
from apps.webhooks.errors import (
    EndpointArchived,
    EndpointLimitReached,
    EndpointNotVerified,
    EndpointPaused,
    NoPreviousSecret,
    OAuthConnectionRevoked,
    SubscriptionConflict,
    SubscriptionInProgress,
    VerificationFailed,
)
from apps.webhooks.models import MAX_ENDPOINTS, WebhookDelivery, WebhookEndpoint

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    return SECRET_PREFIX + secrets_module.token_urlsafe(32)


def check_destination(url: str) -> None:
    """At registration: the URL's shape, and its DNS when it resolves (a name without records yet is accepted;
    every send checks again). Raises 400 naming url."""
    try:
        scheme, _host, _port = sender.check_url_shape(url)
        if scheme == "https":
            try:
                sender.vet(url)
            except sender.UnsafeDestination as exc:
                if "does not resolve" not in str(exc):
                    raise
    except sender.UnsafeDestination as exc:
        raise ValidationFailed.for_field("url", str(exc)) from None


def schedule_drain(endpoint_id) -> None:
    """Hand the endpoint to a worker once the surrounding transaction commits."""
    from apps.webhooks.tasks import drain

    transaction.on_commit(lambda: drain.delay(str(endpoint_id)))


@dataclass(frozen=True)
class CreatedEndpoint:
    endpoint: WebhookEndpoint
    signing_secret: str  # shown once


@transaction.atomic
def endpoint_create(
    *, organization, user, name: str, url: str, events: list[str], subscription_key=None, connection_id=None
) -> CreatedEndpoint:
    check_destination(url)
    # Serialise creations per practice so the 20-endpoint cap holds under concurrency.
    Organization.objects.select_for_update().filter(id=organization.pk).first()
    in_use = WebhookEndpoint.objects.for_org(organization).filter(archived_at__isnull=True).count()
    if in_use >= MAX_ENDPOINTS:
        raise EndpointLimitReached(details={"limit": MAX_ENDPOINTS})
    secret = new_secret()
    endpoint = WebhookEndpoint.objects.create(
        organization=organization,
        name=name.strip(),
        url=url,
        events=list(dict.fromkeys(events)),
        secret_encrypted=crypto.encrypt(secret),
        created_by=user,
        subscription_key=subscription_key,
        connection_id=connection_id,
    )
    return CreatedEndpoint(endpoint=endpoint, signing_secret=secret)


def _locked(organization, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.for_org(organization).select_for_update().get(id=endpoint.id)
    if endpoint.archived_at is not None:
        raise EndpointArchived()
    return endpoint


@transaction.atomic
def endpoint_update(*, organization, endpoint: WebhookEndpoint, data: dict) -> WebhookEndpoint:
    endpoint = _locked(organization, endpoint)
    if "url" in data and data["url"] != endpoint.url:
        check_destination(data["url"])
        # A new destination must prove itself again: disabled, unverified.
        endpoint.url = data["url"]
        endpoint.enabled = False
        endpoint.verified_at = None
    if "name" in data:
        endpoint.name = data["name"].strip()
    if "events" in data:
        endpoint.events = list(dict.fromkeys(data["events"]))
    endpoint.save()
    return endpoint


@transaction.atomic
def endpoint_archive(*, organization, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """DELETE: archive (frees one of the 20 slots); queued deliveries fail."""
    endpoint = WebhookEndpoint.objects.for_org(organization).select_for_update().get(id=endpoint.id)
    if endpoint.archived_at is None:
        now = timezone.now()
        endpoint.archived_at = now
        endpoint.enabled = False
        endpoint.save(update_fields=["archived_at", "enabled", "updated_at"])
        WebhookDelivery.objects.for_org(organization).filter(
            endpoint=endpoint, status__in=[WebhookDelivery.Status.PENDING, WebhookDelivery.Status.IN_FLIGHT]
        ).update(status=WebhookDelivery.Status.FAILED, completed_at=now, last_error="endpoint archived")
    return endpoint


@transaction.atomic
def endpoint_enable(*, organization, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """Only a verified endpoint can be enabled; enabling also resumes a paused one and resets its streak."""
    endpoint = _locked(organization, endpoint)
    if endpoint.verified_at is None:
        raise EndpointNotVerified()
    endpoint.enabled, endpoint.paused, endpoint.paused_reason, endpoint.consecutive_failures = True, False, "", 0
    endpoint.save()
    schedule_drain(endpoint.id)
    return endpoint


@transaction.atomic
def endpoint_pause(*, organization, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    endpoint = _locked(organization, endpoint)
    endpoint.paused, endpoint.paused_reason = True, "manual"
    endpoint.save()
    return endpoint


@transaction.atomic
def endpoint_test(*, organization, endpoint: WebhookEndpoint) -> WebhookDelivery:
    """Queue a test delivery now (allowed while disabled or paused); success sets verifiedAt."""
    endpoint = _locked(organization, endpoint)
    now = timezone.now()
    logical_id = uuid.uuid4()
    body = json.dumps(
        {
            "version": "1",
            "id": str(logical_id),
            "type": "webhook_endpoint.test",
            "createdAt": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "organizationId": str(organization.pk),
            "subject": {"type": "webhook_endpoint", "id": str(endpoint.id)},
            "actor": {"type": "system", "id": "webhooks"},
            "data": {"test": True},
        },
        separators=(",", ":"),
    )
    delivery = engine.new_delivery(
        endpoint=endpoint,
        body=body,
        logical_id=logical_id,
        event_type="webhook_endpoint.test",
        kind=WebhookDelivery.Kind.TEST,
        now=now,
    )
    delivery.save(force_insert=True)
    schedule_drain(endpoint.id)
    return delivery


@transaction.atomic
def delivery_replay(*, organization, delivery: WebhookDelivery) -> WebhookDelivery:
    """A new physical delivery with the same logical id and payload, queued now."""
    endpoint = _locked(organization, delivery.endpoint)
    replay = engine.new_delivery(
        endpoint=endpoint,
        body=delivery.body,
        logical_id=delivery.logical_id,
        event_type=delivery.event_type,
        kind=WebhookDelivery.Kind.REPLAY,
        event=delivery.event,
    )
    replay.save(force_insert=True)
    schedule_drain(endpoint.id)
    return replay


@transaction.atomic
def secret_rotate(*, organization, endpoint: WebhookEndpoint) -> tuple[WebhookEndpoint, str]:
    """A new secret, shown once; the previous one stays valid 24 hours (deliveries carry both signatures)."""
    endpoint = _locked(organization, endpoint)
    secret = new_secret()
    endpoint.previous_secret_encrypted = endpoint.secret_encrypted
    endpoint.previous_secret_expires_at = timezone.now() + engine.SECRET_OVERLAP
    endpoint.secret_encrypted = crypto.encrypt(secret)
    endpoint.save()
    return endpoint, secret


@transaction.atomic
def secret_revoke_previous(*, organization, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    endpoint = _locked(organization, endpoint)
    if not endpoint.previous_secret_encrypted or (
        endpoint.previous_secret_expires_at and endpoint.previous_secret_expires_at <= timezone.now()
    ):
        raise NoPreviousSecret()
    endpoint.previous_secret_encrypted = ""
    endpoint.previous_secret_expires_at = None
    endpoint.save()
    return endpoint


# --- managed subscriptions (OAuth connections) -------------------------------------------------------------------


@dataclass(frozen=True)
class Subscription:
    endpoint: WebhookEndpoint
    signing_secret: str
    created: bool
    # Set when the verification probe failed: the endpoint was archived (its slot returned) and the caller
    # answers 409 WEBHOOK_VERIFICATION_FAILED once this transaction has committed.
    failure: VerificationFailed | None = None


def _probe(url: str) -> sender.Outcome:
    """The verification probe: the receiver must answer 2xx echoing X-Hook-Secret. The challenge is never stored."""
    challenge = secrets_module.token_urlsafe(32)
    body = json.dumps({"type": "webhook_subscription.verify", "challenge": challenge}, separators=(",", ":"))
    outcome = sender.post(
        url,
        body.encode(),
        {"Content-Type": "application/json", "User-Agent": settings.SVC_WEBHOOK_USER_AGENT, "X-Hook-Secret": challenge},
    )
    echoed = next((v for k, v in outcome.headers.items() if k.lower() == "x-hook-secret"), "")
    verified = (
        outcome.status is not None and 200 <= outcome.status < 300 and crypto.constant_time_equals(echoed, challenge)
    )
    return outcome if not verified else sender.Outcome(outcome.status, "", "", None, {"verified": "1"})


def _verification_failed(outcome: sender.Outcome) -> VerificationFailed:
    error = outcome.error or ("the receiver did not echo X-Hook-Secret" if outcome.status else "no response")
    return VerificationFailed(details={"responseStatus": outcome.status, "error": error})


@transaction.atomic
def subscription_upsert(
    *, organization, user, credential, name: str, url: str, events: list[str], subscription_key: str
) -> Subscription:
    """Idempotent subscribe for an OAuth connection (spec rule 7).

    Concurrent identical calls converge: a transaction-scoped advisory lock on (practice, key) is taken without
    waiting; while another call holds it (its endpoint not committed yet) the answer is 409 IN_PROGRESS, after it
    commits the same call finds the endpoint and answers 200 with the same secret.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", [f"{organization.pk}:{subscription_key}"]
        )
        if not cursor.fetchone()[0]:
            raise SubscriptionInProgress()
    existing = (
        WebhookEndpoint.objects.for_org(organization)
        .select_for_update()
        .filter(subscription_key=subscription_key, archived_at__isnull=True)
        .first()
    )
    if existing is not None:
        if existing.connection_id != credential.connection_id or existing.url != url:
            raise SubscriptionConflict()
        if existing.paused:
            raise EndpointPaused()
        existing.name, existing.events = name.strip(), list(dict.fromkeys(events))
        if not existing.enabled:  # repair: a disabled subscription proves itself again, then runs
            outcome = _probe(url)
            if outcome.headers.get("verified") != "1":
                existing.save()
                return Subscription(existing, "", created=False, failure=_verification_failed(outcome))
            existing.enabled, existing.verified_at = True, timezone.now()
        existing.save()
        return Subscription(existing, crypto.decrypt(existing.secret_encrypted), created=False)

    created = endpoint_create(
        organization=organization,
        user=user,
        name=name,
        url=url,
        events=events,
        subscription_key=subscription_key,
        connection_id=credential.connection_id,
    )
    outcome = _probe(url)
    if outcome.headers.get("verified") != "1":
        # The slot is returned: the endpoint is archived (kept for the record, not counted).
        endpoint_archive(organization=organization, endpoint=created.endpoint)
        return Subscription(created.endpoint, "", created=True, failure=_verification_failed(outcome))
    if not connection_still_active(credential):
        raise OAuthConnectionRevoked()
    endpoint = created.endpoint
    endpoint.enabled, endpoint.verified_at = True, timezone.now()
    endpoint.save(update_fields=["enabled", "verified_at", "updated_at"])
    return Subscription(endpoint, created.signing_secret, created=True)


@transaction.atomic
def endpoints_archive_for_connection(*, organization, connection_id) -> int:
    """A disconnected OAuth connection: its endpoints are archived and their queued deliveries fail."""
    count = 0
    for endpoint in WebhookEndpoint.objects.for_org(organization).filter(
        connection_id=connection_id, archived_at__isnull=True
    ):
        endpoint_archive(organization=organization, endpoint=endpoint)
        count += 1
    return count


# Whether an OAuth connection still has its consent: the OAuth app registers the real check in its ready().
# Until one is registered no endpoint is archived by the sweep (nothing can have disconnected).
_connection_checkers: list = []


def register_connection_checker(checker) -> None:
    """checker(connection_ids: set) -> set of the ids that are still connected."""
    if checker not in _connection_checkers:
        _connection_checkers.append(checker)


def archive_endpoints_of_lost_connections() -> int:
    """Hourly (beat): archive the endpoints of connections whose consent disappeared; their queued deliveries fail."""
    if not _connection_checkers:
        return 0
    endpoints = list(
        WebhookEndpoint.objects.unscoped()
        .filter(connection_id__isnull=False, archived_at__isnull=True)
        .select_related("organization")
    )
    connection_ids = {endpoint.connection_id for endpoint in endpoints}
    still_connected = set(connection_ids)
    for checker in _connection_checkers:
        still_connected &= set(checker(connection_ids))
    archived = 0
    for endpoint in endpoints:
        if endpoint.connection_id not in still_connected:
            endpoint_archive(organization=endpoint.organization, endpoint=endpoint)
            archived += 1
    return archived
