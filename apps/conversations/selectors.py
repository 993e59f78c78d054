"""Reads of conversations: channel connections, the inbox, messages, unread counts."""

import re

from django.db.models import BooleanField, Count, Exists, ExpressionWrapper, OuterRef, Q, QuerySet

from apps.conversations.models import ChannelConnection, Conversation, Message, ParkedCallback, ReadMark, Status


def connections_of(*, organization, kind: str | None = None, status: str | None = None) -> QuerySet:
    connections = ChannelConnection.objects.for_org(organization).order_by("kind", "name", "id")
    if kind:
        connections = connections.filter(kind=kind)
    if status:
        connections = connections.filter(status=status)
    return connections


ROUTING_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")


def connection_for_callback(*, kind: str, token: str) -> ChannelConnection | None:
    """The connection a callback URL's routing token names, if it is receiving (not disconnected). Every callback
    starts here, so it is one fixed statement (a raw read skips the ORM's per-call compile)."""
    if not ROUTING_TOKEN.fullmatch(token or ""):
        return None  # not a token we issue (and never a NUL byte in a query)
    found = ChannelConnection.unscoped_objects.raw(
        "SELECT * FROM conversations_channelconnection WHERE routing_token = %s AND kind = %s AND status <> %s",
        [token, kind, Status.DISCONNECTED],
    )
    return next(iter(found), None)


def connections_by_address(*, kind: str, addresses: set[str], organization=None) -> dict[str, ChannelConnection]:
    """The receiving connections (not disconnected) of these addresses, by address; only one practice's when
    `organization` is given (a route token named it)."""
    connections = ChannelConnection.unscoped_objects.filter(kind=kind, address__in=addresses).exclude(
        status=Status.DISCONNECTED
    )
    if organization is not None:
        connections = connections.filter(organization_id=getattr(organization, "pk", organization))
    return {connection.address: connection for connection in connections}


def parked_of(*, organization, state: str | None = None, kind: str | None = None) -> QuerySet:
    """The practice's ingest-review queue (ParkedCallback is platform-owned: the organization filter is the tenancy
    boundary here, so every read goes through this)."""
    if getattr(organization, "pk", organization) is None:
        raise ValueError("parked_of needs an organization")
    parked = ParkedCallback.objects.filter(organization=organization)
    if state:
        parked = parked.filter(state=state)
    if kind:
        parked = parked.filter(kind=kind)
    return parked


def _unread_for(user) -> Q:
    """Unread for this member: a message came in after they last read the conversation (or they never did)."""
    read = ReadMark.objects.unscoped().filter(
        conversation_id=OuterRef("id"), user=user, read_at__gte=OuterRef("last_inbound_at")
    )
    return Q(last_inbound_at__isnull=False) & ~Exists(read)


def conversations_of(*, organization, user, filters: dict | None = None) -> QuerySet:
    """The inbox, unordered (the paginator orders by last activity): each row annotated `unread` for `user`."""
    filters = filters or {}
    conversations = (
        Conversation.objects.for_org(organization)
        .select_related("patient")
        .annotate(unread=ExpressionWrapper(_unread_for(user), output_field=BooleanField()))
    )
    for key in ("channel", "status"):
        if filters.get(key):
            conversations = conversations.filter(**{key: filters[key]})
    if filters.get("patient_id"):
        conversations = conversations.filter(patient_id=filters["patient_id"])
    if filters.get("assignee") == "none":
        conversations = conversations.filter(assignee__isnull=True)
    elif filters.get("assignee"):
        conversations = conversations.filter(assignee_id=filters["assignee"])
    if "unread" in filters:
        conversations = conversations.filter(unread=filters["unread"])
    return conversations


def messages_of(*, organization, conversation) -> QuerySet:
    return Message.objects.for_org(organization).filter(conversation=conversation).prefetch_related("attachments")


def unread_counts(*, organization, user) -> dict:
    rows = (
        Conversation.objects.for_org(organization)
        .filter(_unread_for(user))
        .values("channel")
        .annotate(count=Count("id"))
        .order_by("channel")
    )
    by_channel = {row["channel"]: row["count"] for row in rows}
    return {"total": sum(by_channel.values()), "by_channel": by_channel}


def conversation_get(*, organization, conversation_id) -> Conversation | None:
    return Conversation.objects.for_org(organization).filter(id=conversation_id).first()


def messaging_settings(*, organization):
    """The practice's sending rules (the defaults until it changes them)."""
    from apps.conversations.models import MessagingSettings

    return MessagingSettings.objects.for_org(organization).first() or MessagingSettings(organization=organization)


def message_get(*, organization, message_id) -> Message | None:
    return Message.objects.for_org(organization).prefetch_related("attachments").filter(id=message_id).first()
