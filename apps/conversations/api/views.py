"""Channel connections (tag "Channel connections"): the numbers, addresses and accounts a practice receives
messages on. Settings routes: settings:read to read, settings:update to change."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.conversations import selectors, services
from apps.conversations.api import serializers as s
from apps.conversations.models import ChannelConnection
from apps.core.views import BaseApiView

TAGS = ["Channel connections"]


class ConnectionView(BaseApiView):
    scope_area = "settings"
    error_statuses = ("409",)

    def connection(self, id) -> ChannelConnection:
        return self.get_tenant_object(ChannelConnection, id)

    def render(self, connection: ChannelConnection, status: int = 200) -> Response:
        return Response(s.ChannelConnectionSerializer(connection, context={"request": self.request}).data, status)


class ConnectionListView(ConnectionView):
    permission = {"GET": "settings:read", "POST": "settings:update"}

    @extend_schema(
        tags=TAGS,
        operation_id="channel_connections_list",
        parameters=[s.ChannelConnectionListQuerySerializer],
        responses={200: s.ChannelConnectionListSerializer},
        summary="The practice's channel connections",
        description="Permission settings:read. Every connection (disconnected ones too), by kind and name; "
        "filter with kind and status. Credentials are never returned, only which are set (credentialKeys).",
    )
    def get(self, request):
        query = self.parse_query(s.ChannelConnectionListQuerySerializer).validated_data
        connections = selectors.connections_of(
            organization=self.organization, kind=query.get("kind"), status=query.get("status")
        )
        items = s.ChannelConnectionSerializer(connections, many=True, context={"request": request}).data
        return Response({"items": items})

    @extend_schema(
        tags=TAGS,
        operation_id="channel_connections_create",
        request=s.ChannelConnectionCreateSerializer,
        responses={201: s.ChannelConnectionSerializer},
        summary="Connect a channel",
        description="Permission settings:update. Answers 201 with the connection, status pending, its routing token "
        "and the callbackUrl to set in the provider's console. The credentials are encrypted at rest and never "
        "returned. A number, address or account connected to any practice (not disconnected) answers 409 "
        "CHANNEL_ADDRESS_ALREADY_CONNECTED.",
    )
    def post(self, request):
        data = self.parse_body(s.ChannelConnectionCreateSerializer).validated_data
        connection = services.connection_create(organization=self.organization, user=request.user, data=data)
        return self.render(connection, status=201)


class ConnectionItemView(ConnectionView):
    permission = {"GET": "settings:read", "PATCH": "settings:update", "DELETE": "settings:update"}
    kind = None

    def serializer_context(self) -> dict:
        return {**super().serializer_context(), "kind": self.kind}

    @extend_schema(
        tags=TAGS,
        operation_id="channel_connections_read",
        responses={200: s.ChannelConnectionSerializer},
        summary="Read one channel connection",
        description="Permission settings:read. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return self.render(self.connection(id))

    @extend_schema(
        tags=TAGS,
        operation_id="channel_connections_update",
        request=s.ChannelConnectionUpdateSerializer,
        responses={200: s.ChannelConnectionSerializer},
        summary="Rename, replace credentials, disconnect or reconnect",
        description="Permission settings:update. Credentials sent replace those of the same name; the others are "
        "kept. status disconnected stops receiving and frees the address; pending or active reconnects it.",
    )
    def patch(self, request, id):
        connection = self.connection(id)
        self.kind = connection.kind  # the credentials a change may name depend on it
        data = self.parse_body(s.ChannelConnectionUpdateSerializer).validated_data
        connection = services.connection_update(
            organization=self.organization, user=request.user, connection=connection, data=data
        )
        return self.render(connection)

    @extend_schema(
        tags=TAGS,
        operation_id="channel_connections_disconnect",
        responses={200: s.ChannelConnectionSerializer},
        summary="Disconnect a channel",
        description="Permission settings:update. The connection stops receiving and its address is freed; it is "
        "kept (status disconnected) for the conversations that used it. Disconnecting again changes nothing.",
    )
    def delete(self, request, id):
        connection = services.connection_disconnect(
            organization=self.organization, user=request.user, connection=self.connection(id)
        )
        return self.render(connection)


class RotateTokenView(ConnectionView):
    permission = "settings:update"

    @extend_schema(
        tags=TAGS,
        operation_id="channel_connections_rotate_token",
        request=None,
        responses={200: s.ChannelConnectionSerializer},
        summary="Rotate the routing token",
        description="Permission settings:update. A new routing token and callbackUrl; callbacks to the old URL stop "
        "reaching the connection at once (update the provider's console).",
    )
    def post(self, request, id):
        connection = services.connection_rotate_token(
            organization=self.organization, user=request.user, connection=self.connection(id)
        )
        return self.render(connection)
