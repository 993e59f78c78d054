"""Notifications routes (tag "notifications"): the caller's own feed in the practice, read marks and switches.
Every role holds notification:use; a notification of another member or another practice answers 404."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.core.errors import NotFound
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.scopes import ACCOUNT_AREA
from apps.core.views import BaseApiView
from apps.notifications import selectors, services
from apps.notifications.api import serializers as s
from apps.notifications.renderers import NotificationSerializer

TAGS = ["notifications"]
OWN = (
    "Permission notification:use (every role). Your own notifications in the practice the request acts in; "
    "another member's or another practice's notification answers 404."
)


class NotificationsView(BaseApiView):
    scope_area = ACCOUNT_AREA
    permission = "notification:use"
    renderer_classes = [CamelCaseJSONRenderer]

    def notification(self, id):
        notification = selectors.notification_get(
            organization=self.organization, user=self.request.user, notification_id=id
        )
        if notification is None:
            raise NotFound("No such notification.")
        return notification


class NotificationListView(NotificationsView):
    @extend_schema(
        tags=TAGS,
        operation_id="notifications_list",
        parameters=[s.NotificationListQuerySerializer],
        responses={200: s.NotificationPageSerializer},
        summary="Your notifications, newest first (cursor paging; unread=true for unread only)",
        description=f"{OWN} Kinds: assigned_conversation, mention, task_due, new_lead. Cursor paging (cursor, "
        "limit 1 to 100, 25 by default). New ones are pushed over /today/ws as notification.created.",
    )
    def get(self, request):
        query = self.parse_query(s.NotificationListQuerySerializer).validated_data
        notifications = selectors.feed(
            organization=self.organization, user=request.user, unread_only=query.get("unread", False)
        )
        paginator = NewestFirstCursorPagination()
        page = paginator.paginate_queryset(notifications, request, view=self)
        return Response(paginator.get_paginated_response_data(NotificationSerializer(page, many=True).data))


class UnreadCountView(NotificationsView):
    @extend_schema(
        tags=TAGS,
        operation_id="notifications_unread_count",
        responses={200: s.UnreadCountSerializer},
        summary="How many of your notifications are unread",
        description=f"{OWN} The badge count; live frames carry it too (unreadCount).",
    )
    def get(self, request):
        return Response({"count": selectors.unread_count(organization=self.organization, user=request.user)})


class NotificationView(NotificationsView):
    @extend_schema(
        tags=TAGS,
        operation_id="notifications_read",
        responses={200: NotificationSerializer},
        summary="One of your notifications",
        description=OWN,
    )
    def get(self, request, id):
        return Response(NotificationSerializer(self.notification(id)).data)


def _mark_view(read: bool):
    word = "read" if read else "unread"

    class MarkView(NotificationsView):
        @extend_schema(
            tags=TAGS,
            operation_id=f"notifications_mark_{word}",
            request=None,
            responses={200: NotificationSerializer},
            summary=f"Mark one of your notifications {word}",
            description=f"{OWN} Idempotent: marking it {word} again changes nothing. Your other open sockets get "
            "notification.read_state with the new unreadCount.",
        )
        def post(self, request, id):
            notification = services.notification_mark(
                organization=self.organization, user=request.user, notification=self.notification(id), read=read
            )
            return Response(NotificationSerializer(notification).data)

    MarkView.__name__ = f"Mark{word.title()}View"
    return MarkView


MarkReadView = _mark_view(True)
MarkUnreadView = _mark_view(False)


class ReadAllView(NotificationsView):
    @extend_schema(
        tags=TAGS,
        operation_id="notifications_read_all",
        request=None,
        responses={200: s.ReadAllSerializer},
        summary="Mark all your notifications read",
        description=f"{OWN} Every unread notification of yours in this practice; the others' are untouched.",
    )
    def post(self, request):
        updated = services.notifications_mark_all_read(organization=self.organization, user=request.user)
        return Response({"updated": updated, "unread_count": 0})


class PreferencesView(NotificationsView):
    def render(self, request) -> Response:
        return Response({"preferences": selectors.preferences(organization=self.organization, user=request.user)})

    @extend_schema(
        tags=TAGS,
        operation_id="notifications_preferences_read",
        responses={200: s.PreferencesSerializer},
        summary="Your notification switches, per kind",
        description="Permission notification:use. Every kind with inApp (on unless you switched it off), for the "
        "practice the request acts in: assigned_conversation (a colleague assigned you a conversation), mention "
        "(team chat), task_due (a task assigned to you fell due), new_lead (roles that work leads).",
    )
    def get(self, request):
        return self.render(request)

    @extend_schema(
        tags=TAGS,
        operation_id="notifications_preferences_update",
        request=s.PreferencesUpdateSerializer,
        responses={200: s.PreferencesSerializer},
        summary="Switch notification kinds on or off",
        description="Permission notification:use. preferences: one or more {kind, inApp}; kinds left out keep "
        "their setting; each kind once. Off: nothing of that kind is stored or pushed for you from now on (what "
        "you have stays). Answers every kind's switch.",
    )
    def put(self, request):
        body = self.parse_body(s.PreferencesUpdateSerializer).validated_data
        services.preferences_set(
            organization=self.organization,
            user=request.user,
            changes={item["kind"]: item["in_app"] for item in body["preferences"]},
        )
        return self.render(request)
