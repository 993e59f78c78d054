"""Chat widget routes: widget connections in settings (tag chat-widget), the public /widget/{embedKey}/* surface
(tag widget) and the practice's typing indicator on a widget conversation.

Public routes: the embed key in the path names the widget (it is in the practice's page source: it grants no more
than the widget does); the visitor token (X-Widget-Visitor) is the visitor's identity. A browser on an origin the
widget does not allow is refused (403 WIDGET_ORIGIN_NOT_ALLOWED) and gets no CORS headers; requests without an
Origin (not from a browser page) are let through. Every request passes the abuse screen first; a known widget's
requests take from its bucket for the route (spec Limits). JSON writes are capped at 256 KiB before parsing (413).
"""

import base64
import binascii
import logging
import uuid
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError
from django.utils.cache import patch_vary_headers
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.conversations.public import Conversation, Message
from apps.core.errors import ValidationFailed
from apps.core.limits import MinuteWindowLimit, TokenBucketLimit
from apps.core.pagination import offset_page
from apps.core.views import BaseApiView
from apps.tasks.public import practice_timezone
from apps.widget import selectors, services
from apps.widget.api import serializers as s
from apps.widget.errors import (
    NotWidgetConversation,
    OriginNotAllowed,
    VisitorUnknown,
    WidgetNotFound,
    WidgetNotStored,
)
from apps.widget.models import Visitor, WidgetConnection

logger = logging.getLogger("apps.widget")

SETTINGS_TAGS = ["chat-widget"]
PUBLIC_TAGS = ["widget"]
WIDGET_BODY_BYTES = 256 * 1024
VISITOR_HEADER = "X-Widget-Visitor"


def _widget_key(request, view) -> str | None:
    return str(view.widget.id) if view.widget is not None else None


PUBLIC_SCREEN = MinuteWindowLimit("widget.public", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True)
CONFIG_BUCKET = TokenBucketLimit("widget.config", setting="SVC_WIDGET_CONFIG_BUCKET", key=_widget_key)
READ_BUCKET = TokenBucketLimit("widget.read", setting="SVC_WIDGET_READ_BUCKET", key=_widget_key)
SEND_BUCKET = TokenBucketLimit("widget.send", setting="SVC_WIDGET_SEND_BUCKET", key=_widget_key)

VISITOR_PARAM = OpenApiParameter(
    VISITOR_HEADER, OpenApiTypes.STR, OpenApiParameter.HEADER, required=True, description="The visitor token."
)
COMMON_PUBLIC = (
    "Public; the embed key names the widget (unknown, rotated or inactive keys answer the same 404). A browser page "
    "on an origin the widget does not allow is 403 WIDGET_ORIGIN_NOT_ALLOWED. "
)
VISITOR_REFUSAL = "A missing, unknown or other widget's visitor token is 401 WIDGET_VISITOR_UNKNOWN. "


# --- settings: /widget-connections ----------------------------------------------------------------------------------


class WidgetsView(BaseApiView):
    scope_area = "settings"

    def widget_of(self, id) -> WidgetConnection:
        return self.get_tenant_object(WidgetConnection, id)


class WidgetListView(WidgetsView):
    permission = {"GET": "settings:read", "POST": "settings:update"}

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="widget_connections_list",
        parameters=[s.WidgetListQuerySerializer],
        responses={200: s.WidgetPageSerializer},
        summary="The practice's chat widgets, newest first",
        description="Permission settings:read. {items, total, limit, offset}; each with its embed key and the "
        "snippet to paste into the website.",
    )
    def get(self, request):
        query = self.parse_query(s.WidgetListQuerySerializer).validated_data
        rows, total = selectors.widgets_page(organization=self.organization, **query)
        return offset_page(s.WidgetSerializer(rows, many=True).data, total, **query)

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="widget_connections_create",
        request=s.WidgetWriteSerializer,
        responses={201: s.WidgetSerializer},
        summary="Create a chat widget (embed key, allowed websites, greeting, office hours)",
        description="Permission settings:update. Answers the widget with its embed key and snippet. Its visitors' "
        "threads are conversations of the inbox on its own channel connection (kind widget, "
        "channelConnectionId), answered like any other; a reply reaches the visitor's open widget at once.",
    )
    def post(self, request):
        data = dict(self.parse_body(s.WidgetWriteSerializer).validated_data)
        data.pop("rotate_key", None)
        widget = services.widget_create(organization=self.organization, data=data)
        return Response(s.WidgetSerializer(widget).data, status=201)


class WidgetItemView(WidgetsView):
    permission = {"GET": "settings:read", "PATCH": "settings:update"}

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="widget_connections_read",
        responses={200: s.WidgetSerializer},
        summary="Read one chat widget",
        description="Permission settings:read. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.WidgetSerializer(self.widget_of(id)).data)

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="widget_connections_update",
        request=s.WidgetWriteSerializer,
        responses={200: s.WidgetSerializer},
        summary="Update a chat widget; rotateKey issues a new embed key",
        description="Permission settings:update. Any subset of the fields. active=false takes the widget off the "
        "websites (its key answers 404, its sockets close) and stops its channel connection; the threads stay in "
        "the inbox. rotateKey=true replaces the embed key (the old one stops at once; paste the new snippet).",
    )
    def patch(self, request, id):
        widget = self.widget_of(id)
        data = dict(self.parse_body(s.WidgetWriteSerializer, partial=True).validated_data)
        rotate = data.pop("rotate_key", False)
        widget = services.widget_update(organization=self.organization, widget=widget, data=data, rotate_key=rotate)
        return Response(s.WidgetSerializer(widget).data)


class TypingView(BaseApiView):
    scope_area = "conversations"
    permission = "inbox:work"
    error_statuses = ("409",)

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="widget_conversation_typing",
        request=None,
        responses={204: None},
        summary="Show the visitor that the practice is typing (a widget conversation)",
        description="Permission inbox:work. Sends a typing frame to the open widget of the visitor the "
        "conversation's next reply goes to. Call it every few seconds while typing. A conversation that is not a "
        "chat widget's is 409 NOT_A_WIDGET_CONVERSATION; another practice's is 404.",
    )
    def post(self, request, id):
        conversation = self.get_tenant_object(Conversation, id)
        if conversation.channel != "widget":
            raise NotWidgetConversation()
        services.practice_typing(visitor_id=conversation.contact_address)
        return Response(status=204)


# --- public: /widget/{embedKey}/… -------------------------------------------------------------------------------------


def _cursor(message: Message) -> str:
    raw = f"{message.occurred_at.isoformat()}|{message.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _parse_cursor(value: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
        when, _, ident = raw.partition("|")
        parsed = parse_datetime(when)
        if parsed is None:
            raise ValueError
        return parsed, uuid.UUID(ident)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValidationFailed.for_field("after", "is not a cursor this thread issued") from None


def _messages(rows: list[Message]) -> list[dict]:
    return [
        {
            "id": row.id,
            "sender": "visitor" if row.direction == Message.Direction.INBOUND else "practice",
            "body": row.body,
            "sent_at": row.occurred_at,
        }
        for row in rows
    ]


class PublicWidgetView(BaseApiView):
    public = True
    widget: WidgetConnection | None = None
    cors_methods = "GET"

    def allowed_origin(self, request) -> str | None:
        origin = request.headers.get("Origin")
        if origin and self.widget is not None and s.normalised_origin(origin) in self.widget.allowed_origins:
            return origin
        return None

    def screened(self, request, embed_key: str, bucket: TokenBucketLimit | None) -> WidgetConnection:
        """The abuse screen, 404 for no widget, the origin check, then the widget's bucket for the route."""
        PUBLIC_SCREEN.check(request, self)
        self.widget = selectors.widget_for_key(embed_key)
        if self.widget is None:
            raise WidgetNotFound()
        if request.headers.get("Origin") and self.allowed_origin(request) is None:
            raise OriginNotAllowed()
        if bucket is not None:
            bucket.check(request, self)
        return self.widget

    def visitor(self, request) -> Visitor:
        visitor = selectors.visitor_for_token(self.widget, request.headers.get(VISITOR_HEADER))
        if visitor is None:
            raise VisitorUnknown()
        return visitor

    @extend_schema(exclude=True)
    def options(self, request, embed_key):
        """CORS preflight: allowed origins learn the methods and headers they may use."""
        self.screened(request, embed_key, None)
        response = Response(status=204)
        if self.allowed_origin(request):
            response["Access-Control-Allow-Methods"] = self.cors_methods
            response["Access-Control-Allow-Headers"] = f"Content-Type, {VISITOR_HEADER}"
            response["Access-Control-Max-Age"] = "600"
        return response

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        origin = self.allowed_origin(request)
        if origin:
            response["Access-Control-Allow-Origin"] = origin
        patch_vary_headers(response, ["Origin"])
        return response


class ConfigView(PublicWidgetView):
    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="widget_config",
        summary="What the widget shows: practice name, greeting, office hours and whether the practice is online",
        description=COMMON_PUBLIC + "Limits: 120 burst, 4 per second per widget; 300 per minute per client address.",
        responses={200: s.ConfigSerializer},
        auth=[],
    )
    def get(self, request, embed_key):
        widget = self.screened(request, embed_key, CONFIG_BUCKET)
        return Response(
            {
                "practice_name": widget.organization.name,
                "name": widget.name,
                "greeting": widget.greeting,
                "away_message": widget.away_message,
                "online": selectors.is_open(widget),
                "office_hours": widget.office_hours,
                "timezone": str(practice_timezone(widget.organization)),
            }
        )


class VisitorStartView(PublicWidgetView):
    max_body_bytes = WIDGET_BODY_BYTES
    cors_methods = "POST"

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="widget_visitor_start",
        request=None,
        summary="Start a visitor identity: the token the page keeps and sends with every thread request",
        description=COMMON_PUBLIC + "The token is shown once; keep it (localStorage) to resume the thread later. "
        "Limits: the widget's send bucket (300 burst, 5 per second); 300 per minute per client address.",
        responses={201: s.VisitorStartedSerializer},
        auth=[],
    )
    def post(self, request, embed_key):
        widget = self.screened(request, embed_key, SEND_BUCKET)
        try:
            started = services.visitor_start(widget=widget)
        except DatabaseError as exc:
            logger.warning("widget visitor not stored (%s); answered 503", type(exc).__name__)
            raise WidgetNotStored() from None
        return Response({"visitor_token": started.token, "visitor_id": started.visitor.id}, status=201)


class ThreadView(PublicWidgetView):
    max_body_bytes = WIDGET_BODY_BYTES
    cors_methods = "GET, POST"

    def thread(self, visitor: Visitor, status: int = 200) -> Response:
        rows = selectors.visitor_messages(visitor, after=None, limit=100)
        return Response(
            {
                "open": visitor.patient_id is not None,
                "name": visitor.name,
                "messages": _messages(rows),
                "next_cursor": _cursor(rows[-1]) if rows else None,
            },
            status=status,
        )

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="widget_thread_read",
        parameters=[VISITOR_PARAM],
        summary="Resume the visitor's thread: whether it is open and its latest messages",
        description=COMMON_PUBLIC + VISITOR_REFUSAL + "The visitor's own messages and the practice's replies to "
        "them (up to 100, oldest first) and a cursor for GET …/thread/messages. Limits: the widget's thread-read "
        "bucket (600 burst, 10 per second).",
        responses={200: s.ThreadSerializer, 401: OpenApiResponse(description="WIDGET_VISITOR_UNKNOWN")},
        auth=[],
    )
    def get(self, request, embed_key):
        self.screened(request, embed_key, READ_BUCKET)
        return self.thread(self.visitor(request))

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="widget_thread_open",
        parameters=[VISITOR_PARAM],
        request=s.ThreadOpenSerializer,
        summary="Open the visitor's thread with their name and an e-mail or phone",
        description=COMMON_PUBLIC + VISITOR_REFUSAL + "JSON body at most 256 KiB (413 before parsing). The thread "
        "is filed under the practice's patient with that e-mail or phone, or a new enquiry (lead source \"Chat "
        'widget"); the answer is the same either way. 201 when opened; opening an open thread answers it '
        "unchanged (200; the details given first stay). A thread that could not be stored is 503 "
        "WIDGET_NOT_STORED with Retry-After. Limits: the widget's send bucket.",
        responses={
            201: s.ThreadSerializer,
            200: s.ThreadSerializer,
            401: OpenApiResponse(description="WIDGET_VISITOR_UNKNOWN"),
            413: OpenApiResponse(description="Body over 256 KiB."),
            503: OpenApiResponse(description="Could not be stored; Retry-After."),
        },
        auth=[],
    )
    def post(self, request, embed_key):
        widget = self.screened(request, embed_key, SEND_BUCKET)
        visitor = self.visitor(request)
        data = self.parse_body(s.ThreadOpenSerializer).validated_data
        try:
            visitor, opened = services.thread_open(widget=widget, visitor=visitor, data=dict(data))
        except DatabaseError as exc:
            logger.warning("widget thread not stored (%s); answered 503", type(exc).__name__)
            raise WidgetNotStored() from None
        return self.thread(visitor, status=201 if opened else 200)


class MessagesView(PublicWidgetView):
    max_body_bytes = WIDGET_BODY_BYTES
    cors_methods = "GET, POST"

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="widget_messages_list",
        parameters=[VISITOR_PARAM, s.MessagesQuerySerializer],
        summary="Read the visitor's thread after a cursor (polling; the socket pushes the same live)",
        description=COMMON_PUBLIC + VISITOR_REFUSAL + "Oldest first; nextCursor is the last message's (or the one "
        "passed when nothing is new). A cursor that is not one this thread issued is 400. Limits: the widget's "
        "thread-read bucket (600 burst, 10 per second).",
        responses={200: s.MessagesPageSerializer, 401: OpenApiResponse(description="WIDGET_VISITOR_UNKNOWN")},
        auth=[],
    )
    def get(self, request, embed_key):
        self.screened(request, embed_key, READ_BUCKET)
        visitor = self.visitor(request)
        query = self.parse_query(s.MessagesQuerySerializer).validated_data
        after, after_id = _parse_cursor(query["after"]) if query.get("after") else (None, None)
        rows = selectors.visitor_messages(visitor, after=after, after_id=after_id, limit=query["limit"])
        cursor = _cursor(rows[-1]) if rows else query.get("after")
        return Response({"items": _messages(rows), "next_cursor": cursor or None})

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="widget_messages_send",
        parameters=[VISITOR_PARAM],
        request=s.SendSerializer,
        summary="The visitor sends a message: it reaches the practice's inbox",
        description=COMMON_PUBLIC + VISITOR_REFUSAL + "JSON body at most 256 KiB (413 before parsing); body up to "
        "4,096 characters. The thread must be open (409 WIDGET_THREAD_NOT_OPEN). 201 with the message; a retry "
        "with the same clientMessageId answers the stored one (200) and stores nothing. A message that could not "
        "be stored is 503 WIDGET_NOT_STORED with Retry-After. Limits: the widget's send bucket (300 burst, 5 per "
        "second per widget).",
        responses={
            201: s.WidgetMessageSerializer,
            200: s.WidgetMessageSerializer,
            401: OpenApiResponse(description="WIDGET_VISITOR_UNKNOWN"),
            409: OpenApiResponse(description="WIDGET_THREAD_NOT_OPEN"),
            413: OpenApiResponse(description="Body over 256 KiB."),
            503: OpenApiResponse(description="Could not be stored; Retry-After."),
        },
        auth=[],
    )
    def post(self, request, embed_key):
        widget = self.screened(request, embed_key, SEND_BUCKET)
        visitor = self.visitor(request)
        data = self.parse_body(s.SendSerializer).validated_data
        client_id = data.get("client_message_id") or uuid.uuid4().hex
        try:
            message, created = services.message_send(
                widget=widget, visitor=visitor, body=data["body"], client_message_id=client_id
            )
        except DatabaseError as exc:
            logger.warning("widget message not stored (%s); answered 503", type(exc).__name__)
            raise WidgetNotStored() from None
        return Response(_messages([message])[0], status=201 if created else 200)
