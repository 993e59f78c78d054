"""Reads of conversations, part 1: channel connections."""

from django.db.models import QuerySet

from apps.conversations.models import ChannelConnection


def connections_of(*, organization, kind: str | None = None, status: str | None = None) -> QuerySet:
    connections = ChannelConnection.objects.for_org(organization).order_by("kind", "name", "id")
    if kind:
        connections = connections.filter(kind=kind)
    if status:
        connections = connections.filter(status=status)
    return connections
