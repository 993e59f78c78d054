"""Writes of conversations: channel connections (create, change, disconnect, rotate the routing token, record
health) and the inbox (assign, close, reopen, snooze, read marks). Inbound messages: apps.conversations.inbound."""

import json
import secrets
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.conversations.errors import AddressAlreadyConnected, MessagingPlatformUnavailable
from apps.conversations.models import (
    OWNING_STATUSES,
    ChannelConnection,
    Conversation,
    EmailEventReceipt,
    Health,
    Kind,
    Message,
    ReadMark,
    Status,
)
from apps.conversations.providers import ProviderUnreachable, WhatsAppCloud, receipt_digest
from apps.core import crypto
from apps.core.errors import ValidationFailed
from apps.events.services import Actor, emit

# Provider credentials per kind, by reference provider (research/providers.md): (required, optional) names. The
# messaging app's secret and verify token and the e-mail provider's signing secret belong to the platform's own
# provider accounts (one webhook URL for every practice), so they are settings, not a practice's credentials.
CREDENTIALS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    Kind.MESSAGING_APP: (("access_token",), ()),  # WhatsApp Business Cloud API: the number's system-user token
    Kind.SMS: (("account_sid", "auth_token"), ()),  # Twilio Programmable Messaging
    Kind.EMAIL: ((), ()),  # Resend: the practice's domain lives in the platform's account
    Kind.TELEPHONY_MESSAGING: (("public_key",), ("api_key",)),  # Telnyx (the account's Ed25519 public key)
    # TikTok Business Messaging: the tokens come from the OAuth flow (apps.conversations.connecting), never typed.
    Kind.SHORT_VIDEO: ((), ()),
}


def _actor(user) -> Actor:
    return Actor.user(user) if user is not None else Actor.system()


def new_routing_token() -> str:
    return secrets.token_urlsafe(24)


def assigned_inbound_address(local_part: str) -> str:
    """The inbound e-mail address a practice receives at: its chosen first part, a private random suffix (so no
    practice can take another's inbox by guessing or claiming its address first) and the platform's inbound
    domain, whose mail the e-mail provider receives and posts to /webhooks/email-provider."""
    suffix = "".join(secrets.choice("abcdefghijkmnpqrstuvwxyz23456789") for _ in range(10))
    return f"{local_part}.{suffix}@{settings.SVC_INBOUND_EMAIL_DOMAIN}"


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


def connection_create(*, organization, user, data: dict[str, Any]) -> ChannelConnection:
    """A new connection, pending until its first verified callback. A messaging-app number is connected only with a
    token the platform accepts for that number; an e-mail inbox gets an address of its own (no practice can claim
    another's by typing it first). No transaction is open while the platform is asked."""
    address = data["address"]
    if data["kind"] == Kind.MESSAGING_APP:
        _require_number_access(address, data["credentials"]["access_token"])
    if data["kind"] == Kind.EMAIL:
        address = assigned_inbound_address(address)
    connection = ChannelConnection(
        organization=organization,
        kind=data["kind"],
        name=data["name"],
        address=address,
        routing_token=new_routing_token(),
    )
    _store_credentials(connection, data["credentials"])
    return _save(connection)


def connection_update(*, organization, user, connection: ChannelConnection, data: dict[str, Any]) -> ChannelConnection:
    """Rename, replace some credentials (the others kept), or change status: disconnected releases the address;
    pending or active again claims it back (409 when another practice has it meanwhile). A messaging-app number is
    asked of the platform again when its token changes or it is reconnected."""
    if connection.kind == Kind.MESSAGING_APP:
        reconnecting = (
            data.get("status") in (Status.PENDING, Status.ACTIVE) and connection.status == Status.DISCONNECTED
        )
        token = (data.get("credentials") or {}).get("access_token")
        if token or reconnecting:
            _require_number_access(connection.address, token or connection_credentials(connection)["access_token"])
    return _apply_update(connection, data)


@transaction.atomic
def _apply_update(connection: ChannelConnection, data: dict[str, Any]) -> ChannelConnection:
    if "name" in data:
        connection.name = data["name"]
    if data.get("credentials"):
        _store_credentials(connection, {**connection_credentials(connection), **data["credentials"]})
    status = data.get("status")
    if status and status != connection.status:
        connection.status = status
        connection.disconnected_at = timezone.now() if status == Status.DISCONNECTED else None
    return _save(connection)


def _require_number_access(phone_number_id: str, access_token: str) -> None:
    """The messaging platform must confirm that this token reaches this phone number id (Graph GET /{id}): the
    platform signs every number's callbacks with one app secret, so the number is what ties them to a practice,
    and nobody may connect a number they cannot use. Without a Graph URL (a development machine: the sandbox
    transport) nothing is asked."""
    graph_url = settings.SVC_MESSAGING_APP_GRAPH_URL
    if not graph_url:
        return
    try:
        confirmed = WhatsAppCloud.number_reachable(graph_url, phone_number_id, access_token)
    except ProviderUnreachable:
        raise MessagingPlatformUnavailable() from None
    if not confirmed:
        raise ValidationFailed.for_field(
            "credentials", "the messaging platform does not accept this access token for this phone number id"
        )


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


@transaction.atomic
def email_event_attempt(event_id: str) -> bool:
    """Count one delivery of an e-mail provider event against its receipt (five attempts within 24 hours). True
    when this delivery should be processed; False when the event was already stored or is settled (then, and
    from then on, it is acknowledged without effect). Committed on its own, so a failed store still counts."""
    receipt, _ = EmailEventReceipt.objects.select_for_update().get_or_create(digest=receipt_digest(event_id))
    if receipt.state != EmailEventReceipt.State.PENDING:
        return False
    expired = receipt.first_seen_at < timezone.now() - timezone.timedelta(hours=EmailEventReceipt.LIFETIME_HOURS)
    if receipt.attempts >= EmailEventReceipt.MAX_ATTEMPTS or expired:
        receipt.state = EmailEventReceipt.State.SETTLED
        receipt.save(update_fields=["state"])
        return False
    receipt.attempts += 1
    receipt.save(update_fields=["attempts"])
    return True


# --- the inbox -------------------------------------------------------------------------------------------------


def _conversation_changed(organization, user, conversation: Conversation, action: str, fields: list[str]) -> None:
    emit(
        organization=organization,
        type="conversation.updated",
        subject_type="conversation",
        subject_id=conversation.id,
        actor=_actor(user),
        action=action,
        changed_fields=fields,
        data={
            "status": conversation.status,
            "channel": conversation.channel,
            "patientId": str(conversation.patient_id),
            "assigneeId": str(conversation.assignee_id) if conversation.assignee_id else None,
        },
    )


@transaction.atomic
def conversation_assign(*, organization, user, conversation: Conversation, assignee) -> Conversation:
    if conversation.assignee_id != (assignee.pk if assignee else None):
        conversation.assignee = assignee
        conversation.save(update_fields=["assignee", "updated_at"])
        _conversation_changed(organization, user, conversation, "assigned", ["assigneeId"])
    return conversation


@transaction.atomic
def conversation_set_status(*, organization, user, conversation: Conversation, status: str, snoozed_until=None):
    """open (reopen), closed, or snoozed until a time; an inbound message reopens any of them."""
    if (conversation.status, conversation.snoozed_until) != (status, snoozed_until):
        conversation.status, conversation.snoozed_until = status, snoozed_until
        conversation.save(update_fields=["status", "snoozed_until", "updated_at"])
        _conversation_changed(organization, user, conversation, status, ["status", "snoozedUntil"])
    return conversation


@transaction.atomic
def conversation_mark(*, organization, user, conversation: Conversation, read: bool) -> None:
    """Read up to now, or unread again (for this member only)."""
    marks = ReadMark.objects.for_org(organization).filter(conversation=conversation, user=user)
    if read:
        updated = marks.update(read_at=timezone.now(), updated_at=timezone.now())
        if not updated:
            ReadMark.objects.for_org(organization).get_or_create(
                organization_id=conversation.organization_id,
                conversation=conversation,
                user=user,
                defaults={"read_at": timezone.now()},
            )
    else:
        marks.delete()


@transaction.atomic
def merge_conversations_into_survivor(*, organization, survivor, duplicate) -> None:
    """Patients merge hook: the duplicate's conversations become the survivor's. Where both talk on the same
    connection the duplicate's messages move into the survivor's conversation (one conversation per patient and
    connection), which keeps the later activity."""
    conversations = Conversation.objects.for_org(organization).select_for_update()
    theirs = {c.connection_id: c for c in conversations.filter(patient_id=survivor.pk)}
    for conversation in conversations.filter(patient_id=duplicate.pk).order_by("id"):
        target = theirs.get(conversation.connection_id)
        if target is None:
            conversation.patient_id = survivor.pk
            conversation.save(update_fields=["patient", "updated_at"])
            _conversation_changed(organization, None, conversation, "patient_merged", ["patientId"])
            continue
        Message.objects.for_org(organization).filter(conversation=conversation).update(conversation=target)
        target.last_message_at = max(target.last_message_at, conversation.last_message_at)
        target.last_inbound_at = max(filter(None, [target.last_inbound_at, conversation.last_inbound_at]), default=None)
        target.save(update_fields=["last_message_at", "last_inbound_at", "updated_at"])
        conversation.delete()
        _conversation_changed(organization, None, target, "patient_merged", ["messages"])


# --- sending rules ------------------------------------------------------------------------------------------------


@transaction.atomic
def messaging_settings_update(*, organization, data: dict[str, Any]):
    """Change the practice's quiet hours (held marketing messages are re-timed by the senders as they come due)."""
    from apps.conversations.models import MessagingSettings

    rules, _ = (
        MessagingSettings.objects.for_org(organization).select_for_update().get_or_create(organization=organization)
    )
    for name in ("quiet_hours_enabled", "quiet_hours_start", "quiet_hours_end"):
        if name in data:
            setattr(rules, name, data[name])
    rules.save()
    return rules


# --- the messaging platform's account facts -----------------------------------------------------------------------

# Called with each template review decision for a practice that has a number in that business account:
# callback(organization_id=…, name=…, language=…, status=…, reason=…). Filled by apps.campaigns in its ready().
_template_status_listeners: list = []


def on_template_status(callback) -> None:
    if callback not in _template_status_listeners:
        _template_status_listeners.append(callback)


def business_accounts_seen(accounts: dict[str, str]) -> None:
    """Record which business account each connected number belongs to, as a verified callback says."""
    for number_id, account_id in accounts.items():
        ChannelConnection.unscoped_objects.filter(
            kind=Kind.MESSAGING_APP, address=number_id, status__in=OWNING_STATUSES
        ).exclude(business_account_id=account_id).update(business_account_id=account_id, updated_at=timezone.now())


@transaction.atomic
def template_statuses_received(statuses) -> int:
    """Hand each template decision to the practices whose numbers belong to that business account. Returns how
    many practice-decisions were handed on."""
    handed = 0
    for status in statuses:
        organizations = set(
            ChannelConnection.unscoped_objects.filter(
                kind=Kind.MESSAGING_APP, business_account_id=status.account_id, status__in=OWNING_STATUSES
            ).values_list("organization_id", flat=True)
        )
        for organization_id in organizations:
            for listener in _template_status_listeners:
                listener(
                    organization_id=organization_id,
                    name=status.name,
                    language=status.language,
                    status=status.status,
                    reason=status.reason,
                )
            handed += 1
    return handed


# --- the chat widget's connection (made and kept by apps.widget) ---------------------------------------------------


@transaction.atomic
def widget_channel_create(*, organization, name: str, embed_key: str) -> ChannelConnection:
    """The connection a chat widget's conversations belong to: no provider, no credentials, active at once."""
    connection = ChannelConnection(
        organization=organization,
        kind=Kind.WIDGET,
        name=name,
        address=embed_key,
        routing_token=new_routing_token(),
        status=Status.ACTIVE,
        health=Health.HEALTHY,
    )
    _store_credentials(connection, {})
    return _save(connection)


def widget_channel_sync(connection: ChannelConnection, *, name: str, active: bool, embed_key: str) -> None:
    """Keep the widget's connection in step with the widget: its name, its key and whether it receives."""
    connection.name, connection.address = name, embed_key
    connection.status = Status.ACTIVE if active else Status.DISCONNECTED
    connection.disconnected_at = None if active else (connection.disconnected_at or timezone.now())
    _save(connection)
