"""Reads of conversations: channel connections, the inbox, messages, unread counts."""

from django.db.models import BooleanField, Count, Exists, ExpressionWrapper, OuterRef, Q, QuerySet

from apps.conversations.models import ChannelConnection, Conversation, Message, ReadMark, Status


def connections_of(*, organization, kind: str | None = None, status: str | None = None) -> QuerySet:
    connections = ChannelConnection.objects.for_org(organization).order_by("kind", "name", "id")
    if kind:
        connections = connections.filter(kind=kind)
    if status:
        connections = connections.filter(status=status)
    return connections


def connection_for_callback(*, kind: str, token: str) -> ChannelConnection | None:
    """The connection a callback URL's routing token names, if it is receiving (not disconnected)."""
    if not token or len(token) > 64:
        return None
    return (
        ChannelConnection.unscoped_objects.filter(kind=kind, routing_token=token)
        .exclude(status=Status.DISCONNECTED)
        .first()
    )


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
    return Message.objects.for_org(organization).filter(conversation=conversation)


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
