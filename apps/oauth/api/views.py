"""Connected apps of the active practice: list (any member) and disconnect (your own, or anyone's with
settings:update)."""

from drf_spectacular.utils import extend_schema
from oauth2_provider.models import Application
from rest_framework.response import Response

from apps.accounts.roles import role_has_permission
from apps.core.errors import PermissionDenied
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.views import BaseApiView
from apps.oauth import connections
from apps.oauth.api import serializers as s
from apps.oauth.models import Connection


def connected_app_body(connection: Connection, viewer_id) -> dict:
    application, user = connection.application, connection.user
    return {
        "id": connection.id,
        "application_name": application.name or application.client_id,
        "client_id": application.client_id,
        "verified": application.registration_source != Application.RegistrationSource.DCR,
        "scopes": connection.scopes.split(),
        "user_id": user.id,
        "user_name": user.name,
        "user_email": user.email,
        "mine": user.id == viewer_id,
        "created_at": connection.created_at,
        "last_used_at": connection.last_used_at,
    }


class ConnectedAppListView(BaseApiView):
    permission = "member:read"
    scope_area = "settings"
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        tags=["connected-apps"],
        responses={200: s.ConnectedAppOutput(many=True)},
        summary="Apps connected to the active practice (OAuth connections), newest first",
        description="Any member of the practice. The practice's live OAuth connections, newest first, {items, "
        "nextCursor} paging until null: app name, clientId, verified (false for self-registered apps), scopes, who "
        "authorized it (userId, userName, userEmail, mine), createdAt, lastUsedAt.",
    )
    def get(self, request):
        live = (
            Connection.objects.for_org(self.organization)
            .filter(revoked_at__isnull=True)
            .select_related("application", "user")
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(live, request, view=self)
        items = s.ConnectedAppOutput([connected_app_body(c, request.user.id) for c in page], many=True).data
        return Response(paginator.get_paginated_response_data(items))


class ConnectedAppView(BaseApiView):
    permission = "member:read"  # your own connection; another member's needs settings:update (below)
    scope_area = "settings"

    @extend_schema(
        tags=["connected-apps"],
        request=None,
        responses={200: s.ConnectedAppOutput},
        summary="Disconnect an app: its tokens stop working on their next request and the webhook endpoints it "
        "created are archived",
        description="Your own connection needs member:read; another member's needs settings:update. Every token of "
        "the connection answers 401 on its next request and the webhook endpoints it created are archived (their "
        "queued deliveries fail). Answers the connection. Another practice's or an already disconnected id answers "
        "404.",
    )
    def delete(self, request, id):
        live = Connection.objects.for_org(self.organization).filter(revoked_at__isnull=True)
        connection = self.get_tenant_object(Connection, id, queryset=live.select_related("application", "user"))
        if connection.user_id != request.user.id and not role_has_permission(self.membership.role, "settings:update"):
            raise PermissionDenied("Disconnecting another member's app needs the settings:update permission.")
        connections.disconnect(connection)
        return Response(s.ConnectedAppOutput(connected_app_body(connection, request.user.id)).data)
