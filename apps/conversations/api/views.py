"""Channel connections (tag "Channel connections"): the numbers, addresses and accounts a practice receives
messages on. Settings routes: settings:read to read, settings:update to change."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.conversations import selectors, services
from apps.conversations.api import serializers as s
from apps.conversations.models import PROVIDER_KINDS, ChannelConnection
from apps.core.errors import ValidationFailed
from apps.core.views import BaseApiView

TAGS = ["Channel connections"]


class ConnectionView(BaseApiView):
    scope_area = "settings"
    error_statuses = ("409",)

    def connection(self, id) -> ChannelConnection:
        """A provider connection; a chat widget's is managed through its widget (here it is 404)."""
        queryset = ChannelConnection.objects.for_org(self.organization).filter(kind__in=PROVIDER_KINDS)
        return self.get_tenant_object(ChannelConnection, id, queryset=queryset)

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
        connections = [connection for connection in connections if connection.kind in PROVIDER_KINDS]
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


class MessagingSettingsView(BaseApiView):
    scope_area = "settings"
    permission = {"GET": "settings:read", "PUT": "settings:update"}

    def render(self, rules) -> Response:
        return Response(s.MessagingSettingsSerializer(rules, context={"timezone": self.organization.timezone}).data)

    @extend_schema(
        tags=TAGS,
        operation_id="messaging_settings_read",
        responses={200: s.MessagingSettingsSerializer},
        summary="The practice's sending rules (quiet hours)",
        description="Permission settings:read. Quiet hours (default on, 21:00 to 08:00 in the practice's time "
        "zone) hold marketing messages — campaigns and marketing templates — queued until they end "
        "(heldReason QUIET_HOURS); replies and other service messages are sent at once.",
    )
    def get(self, request):
        return self.render(selectors.messaging_settings(organization=self.organization))

    @extend_schema(
        tags=TAGS,
        operation_id="messaging_settings_update",
        request=s.MessagingSettingsUpdateSerializer,
        responses={200: s.MessagingSettingsSerializer},
        summary="Change the quiet hours",
        description="Permission settings:update. Times are HH:MM in the practice's time zone; the hours may run "
        "past midnight (start after end); start equal to end is refused. Fields left out keep their values.",
    )
    def put(self, request):
        data = self.parse_body(s.MessagingSettingsUpdateSerializer).validated_data
        current = selectors.messaging_settings(organization=self.organization)
        start = data.get("quiet_hours_start", current.quiet_hours_start)
        end = data.get("quiet_hours_end", current.quiet_hours_end)
        if start == end:
            raise ValidationFailed.for_field("quietHoursEnd", "must differ from quietHoursStart")
        return self.render(services.messaging_settings_update(organization=self.organization, data=data))
