"""Support chat routes (tag "support"): the signed-in person's thread with the platform's support staff.

/support is a browser-session surface (spec Authentication rule 9): API keys and OAuth tokens answer 403
BROWSER_SESSION_REQUIRED before routing (apps.core.middleware.BrowserSessionSurfaceMiddleware), and the views say so
too. A practice is not needed; the one the person acts in (X-Organization-ID, else the session's active practice,
else their only one) is kept on each message they write, for support staff."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.core.errors import OrganizationAmbiguous
from apps.core.limits import TokenBucketLimit
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.permissions import ACCOUNT_AREA, AUTHENTICATED
from apps.core.views import BaseApiView
from apps.support import selectors, services
from apps.support.api import serializers as s
from apps.support.renderers import SupportMessageSerializer

TAGS = ["support"]
ACCESS = (
    "Browser session only: an API key or OAuth token answers 403 BROWSER_SESSION_REQUIRED. Your own thread only; "
    "no practice permission is needed. "
)


def _poster(request, view) -> str | None:
    """Spec Limits, "Support chat messages": per user, on sending only."""
    user = getattr(request, "user", None)
    if request.method != "POST" or user is None or not user.is_authenticated:
        return None
    return f"user:{user.pk}"


SUPPORT_MESSAGE_LIMIT = TokenBucketLimit("support-chat", setting="SVC_SUPPORT_CHAT_BUCKET", key=_poster)


class MessagePagination(NewestFirstCursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 50


class SupportView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA
    browser_session_only = True

    def serializer_context(self) -> dict:
        return {"request": self.request, "view": self}

    def acting_organization(self):
        """The practice the person acts in, if one is chosen; None when they have none or several and chose none."""
        try:
            return self.organization_choice(self.request).organization
        except OrganizationAmbiguous:
            return None


def _thread_response(thread, *, unread: int) -> Response:
    return Response(
        s.SupportThreadSerializer(
            {
                "id": thread.id if thread else None,
                "organization_id": thread.organization_id if thread else None,
                "last_message_at": thread.last_message_at if thread else None,
                "awaiting_reply": thread.awaiting_reply if thread else False,
                "unread_reply_count": unread,
            }
        ).data
    )


class SupportThreadView(SupportView):
    @extend_schema(
        tags=TAGS,
        operation_id="support_thread_read",
        responses={200: s.SupportThreadSerializer},
        summary="Your support thread: whether support owes a reply, and replies you have not read",
        description=ACCESS + "Before your first message the thread has no id and nothing unread.",
    )
    def get(self, request):
        thread = selectors.thread_of(request.user)
        return _thread_response(thread, unread=selectors.unread_reply_count(thread))


class SupportReadView(SupportView):
    @extend_schema(
        tags=TAGS,
        operation_id="support_thread_mark_read",
        request=None,
        responses={200: s.SupportThreadSerializer},
        summary="Mark support's replies read",
        description=ACCESS + "Answers the thread, with nothing unread.",
    )
    def post(self, request):
        return _thread_response(services.support_mark_read(user=request.user), unread=0)


class SupportMessagesView(SupportView):
    rate_limits = (SUPPORT_MESSAGE_LIMIT,)

    @extend_schema(
        tags=TAGS,
        operation_id="support_messages_list",
        parameters=[s.PageQuerySerializer],
        responses={200: s.SupportMessagePageSerializer},
        summary="Your messages to support and their replies, newest first",
        description=ACCESS + "Cursor paging (cursor, limit ≤ 100, 50 by default). Staff replies have fromStaff "
        "true. Reading does not mark replies read (POST /support/thread/read does).",
    )
    def get(self, request):
        self.parse_query(s.PageQuerySerializer)
        paginator = MessagePagination()
        page = paginator.paginate_queryset(selectors.messages_of(request.user), request, view=self)
        return Response(paginator.get_paginated_response_data(SupportMessageSerializer(page, many=True).data))

    @extend_schema(
        tags=TAGS,
        operation_id="support_messages_post",
        request=s.SupportMessageCreateSerializer,
        responses={201: SupportMessageSerializer},
        summary="Write to support",
        description=ACCESS + "Limited per person: a bucket of 30 messages refilled at 1 per second; beyond it 429 "
        "with Retry-After (seconds). The practice you are acting in (X-Organization-ID, else the session's active "
        "practice, else your only one) is kept on the message for support staff; X-Organization-ID naming a "
        "practice you are not in answers 403 ORGANIZATION_FORBIDDEN. Staff reply from the back office; their "
        "replies appear in this list (and live on /today/ws as support.reply).",
    )
    def post(self, request):
        data = self.parse_body(s.SupportMessageCreateSerializer).validated_data
        message = services.support_message_post(
            user=request.user, organization=self.acting_organization(), body=data["body"]
        )
        return Response(SupportMessageSerializer(message).data, status=201)
