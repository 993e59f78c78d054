"""Writes of conversations, part 1: channel connections (create, change, disconnect, rotate the routing token,
record health)."""

import json
import secrets
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.conversations.errors import AddressAlreadyConnected
from apps.conversations.models import ChannelConnection, Kind, Status
from apps.core import crypto
from apps.events.services import Actor, emit

# Provider credentials per kind, by reference provider (research/providers.md): (required, optional) names.
CREDENTIALS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    Kind.MESSAGING_APP: (("app_secret", "verify_token"), ("access_token",)),  # WhatsApp Business Cloud API
    Kind.SMS: (("account_sid", "auth_token"), ()),  # Twilio Programmable Messaging
    Kind.EMAIL: (("signing_secret",), ("api_key",)),  # Resend (Svix signing)
    Kind.TELEPHONY_MESSAGING: (("public_key",), ("api_key",)),  # Telnyx (Ed25519 public key)
}


def _actor(user) -> Actor:
    return Actor.user(user) if user is not None else Actor.system()


def new_routing_token() -> str:
    return secrets.token_urlsafe(24)


def connection_credentials(connection: ChannelConnection) -> dict[str, str]:
    """The decrypted credentials, for the callback verifiers and provider clients only (never rendered)."""
    return json.loads(crypto.decrypt(connection.credentials_encrypted))


def _store_credentials(connection: ChannelConnection, credentials: dict[str, str]) -> None:
    connection.credentials_encrypted = crypto.encrypt(json.dumps(credentials, sort_keys=True))
    connection.credential_keys = sorted(credentials)


def _save(connection: ChannelConnection) -> ChannelConnection:
    """Saves; another practice (or connection) owning the same address answers 409 instead of an IntegrityError."""
    try:
        with transaction.atomic():
            connection.save()
    except IntegrityError as error:
        if "conv_connection_address_unique" in str(error):
            raise AddressAlreadyConnected(details={"address": connection.address}) from None
        raise
    return connection


@transaction.atomic
def connection_create(*, organization, user, data: dict[str, Any]) -> ChannelConnection:
    connection = ChannelConnection(
        organization=organization,
        kind=data["kind"],
        name=data["name"],
        address=data["address"],
        routing_token=new_routing_token(),
    )
    _store_credentials(connection, data["credentials"])
    return _save(connection)


@transaction.atomic
def connection_update(*, organization, user, connection: ChannelConnection, data: dict[str, Any]) -> ChannelConnection:
    """Rename, replace some credentials (the others kept), or change status: disconnected releases the address;
    pending or active again claims it back (409 when another practice has it meanwhile)."""
    if "name" in data:
        connection.name = data["name"]
    if data.get("credentials"):
        _store_credentials(connection, {**connection_credentials(connection), **data["credentials"]})
    status = data.get("status")
    if status and status != connection.status:
        connection.status = status
        connection.disconnected_at = timezone.now() if status == Status.DISCONNECTED else None
    return _save(connection)


def connection_disconnect(*, organization, user, connection: ChannelConnection) -> ChannelConnection:
    if connection.status == Status.DISCONNECTED:
        return connection
    return connection_update(
        organization=organization, user=user, connection=connection, data={"status": Status.DISCONNECTED}
    )


@transaction.atomic
def connection_rotate_token(*, organization, user, connection: ChannelConnection) -> ChannelConnection:
    """A new routing token: callbacks to the old callback URL stop reaching the connection at once."""
    connection.routing_token = new_routing_token()
    connection.save(update_fields=["routing_token", "updated_at"])
    return connection


@transaction.atomic
def connection_record_health(*, connection: ChannelConnection, health: str, reason: str = "") -> bool:
    """Record what the callbacks and provider calls found. A change of health emits channel_connection.health_changed
    (kind, status and the two healths; never the address or credentials). Returns whether it changed."""
    locked = ChannelConnection.objects.for_org(connection.organization_id).select_for_update().get(pk=connection.pk)
    if locked.health == health:
        return False
    previous = locked.health
    locked.health, locked.health_reason, locked.health_changed_at = health, reason[:200], timezone.now()
    locked.save(update_fields=["health", "health_reason", "health_changed_at", "updated_at"])
    emit(
        organization=locked.organization,
        type="channel_connection.health_changed",
        subject_type="channel_connection",
        subject_id=locked.id,
        actor=Actor.system(),
        data={"kind": locked.kind, "status": locked.status, "health": health, "previousHealth": previous},
    )
    connection.health, connection.health_reason, connection.health_changed_at = (
        locked.health,
        locked.health_reason,
        locked.health_changed_at,
    )
    return True
