"""The short-video platform's direct messages (TikTok Business Messaging): connecting an account through the
platform's OAuth (a settings route that starts it, the public return), and the platform's webhook."""

import logging
import time

from django.conf import settings
from django.contrib.auth import get_user
from django.db import DatabaseError
from django.http import HttpResponseRedirect
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from apps.conversations import connecting, selectors, short_video
from apps.conversations.api import serializers as s
from apps.conversations.api.callbacks import JSON, KIB, CallbackView, RawJson, _acknowledgement
from apps.conversations.errors import CallbackNotStored, ConnectStateInvalid, ShortVideoPlatformUnavailable
from apps.conversations.models import Kind
from apps.conversations.providers import ProviderUnreachable
from apps.core.browser_pages import wants_html
from apps.core.errors import ServiceUnavailable
from apps.core.limits import MinuteWindowLimit
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.views import BaseApiView

logger = logging.getLogger("apps.conversations")

CONNECTIONS_TAGS = ["Channel connections"]


class FirstRenderer(BaseContentNegotiation):
    """The OAuth return answers JSON to an API client and redirects a browser (or shows it an error page): a
    browser's Accept: text/html is never refused with 406."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ShortVideoConnectView(BaseApiView):
    scope_area = "settings"
    permission = "settings:update"
    error_statuses = ("409",)

    @extend_schema(
        tags=CONNECTIONS_TAGS,
        operation_id="channel_connections_short_video_connect",
        request=s.ShortVideoConnectSerializer,
        responses={200: s.ShortVideoConnectStartSerializer},
        summary="Start connecting a short-video account (TikTok Business Messaging OAuth): the authorize URL",
        description="Permission settings:update. Answers the short-video platform's authorize URL (TikTok: "
        "client_key, scope user.info.basic and message.list.read/send/manage, response_type=code, redirect_uri, "
        "state). The state is single-use: 32 random bytes, only its SHA-256 stored, valid 10 minutes, bound to the "
        "practice and the caller. The platform returns the person to GET /webhooks/short-video/oauth/callback, "
        "which connects the account as a `short_video` channel connection named `name`. 409 "
        "SHORT_VIDEO_NOT_CONFIGURED when this deployment has no platform client key. In the sandbox the URL is the "
        'callback itself with a sandbox code. The body is optional (name defaults to "Short-video messages").',
    )
    def post(self, request):
        name = s.ShortVideoConnectSerializer().fields["name"].default
        if int(request.META.get("CONTENT_LENGTH") or 0):  # the body is optional: {} or none keeps the default name
            name = self.parse_body(s.ShortVideoConnectSerializer).validated_data["name"]
        url = connecting.connect_start(organization=self.organization, user=request.user, name=name)
        expires = int(connecting.STATE_TTL.total_seconds())
        return Response(s.ShortVideoConnectStartSerializer({"authorize_url": url, "expires_in": expires}).data)


PUBLIC_SCREEN = MinuteWindowLimit(
    "conversations.short-video-connect", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True
)


class ShortVideoOAuthCallbackView(BaseApiView):
    public = True
    rate_limits = (PUBLIC_SCREEN,)
    renderer_classes = [CamelCaseJSONRenderer]
    content_negotiation_class = FirstRenderer
    error_statuses = ("409",)

    @extend_schema(
        tags=CONNECTIONS_TAGS,
        operation_id="webhooks_short_video_oauth_callback",
        summary="The short-video platform's OAuth return: exchanges the code, connects the business account",
        description="Public; the single-use state is the boundary. Unknown, expired or already used states, a "
        "state started by another person than the signed-in browser's (refused without spending it), a refusal "
        "at the platform (`error`, such as access_denied) or a code the platform does not accept answer 400 "
        "CONNECT_STATE_INVALID; an account another practice has connected 400 ACCOUNT_IN_USE; none changes "
        "anything. The code is exchanged at the platform's token endpoint (TikTok Business API POST "
        "/tt_user/oauth2/token/); the business account's open id becomes the connection's address and its access "
        "and refresh tokens are stored encrypted (never returned). A new connection is pending until its first "
        "verified webhook; the practice's earlier connection of the same account gets the new tokens (a "
        "disconnected one is pending again). A platform outage answers 503 SHORT_VIDEO_PLATFORM_UNAVAILABLE and "
        "the person starts again. A browser (Accept text/html) is redirected to the app's channel settings, or "
        "shown an error page; an API client gets the connection, or the error envelope. Limit: 300 requests per "
        "minute per client address.",
        parameters=[
            OpenApiParameter("code", OpenApiTypes.STR, OpenApiParameter.QUERY),
            OpenApiParameter("state", OpenApiTypes.STR, OpenApiParameter.QUERY, required=True),
            OpenApiParameter("error", OpenApiTypes.STR, OpenApiParameter.QUERY),
            OpenApiParameter("error_description", OpenApiTypes.STR, OpenApiParameter.QUERY),
        ],
        responses={
            200: s.ChannelConnectionSerializer,
            302: OpenApiResponse(description="A browser: sent to the app's channel settings."),
            503: OpenApiResponse(description="The platform could not be reached; Retry-After."),
        },
        auth=[],
    )
    def get(self, request):
        query = request.query_params
        # The browser's own session (the route takes no credential, so DRF's request.user is anonymous).
        user = get_user(request._request)
        signed_in = user.pk if user.is_authenticated else None
        try:
            claimed = connecting.claim_state(query.get("state", ""), signed_in_user_id=signed_in)
            if query.get("error"):
                raise ConnectStateInvalid("The connection was not authorised at the short-video platform.")
            connection = connecting.connect_finish(claimed=claimed, code=query.get("code", ""))
        except short_video.ProviderRefused as refusal:
            raise ConnectStateInvalid(
                "The short-video platform refused the authorization code.", details={"providerCode": refusal.code}
            ) from None
        except ProviderUnreachable:
            raise ShortVideoPlatformUnavailable() from None
        except DatabaseError:
            logger.exception("short-video connection not stored")
            raise ServiceUnavailable("The connection could not be stored; start again shortly.") from None
        if wants_html(request):
            return HttpResponseRedirect(f"{settings.SVC_APP_URL}/settings/channels?connected=short_video")
        return Response(s.ChannelConnectionSerializer(connection, context={"request": request}).data)


class ShortVideoWebhookView(CallbackView):
    max_body_bytes = 256 * KIB
    parser_classes = [RawJson]

    @extend_schema(
        tags=["inbox"],
        operation_id="webhooks_short_video",
        summary="Direct messages from the short-video platform (TikTok Business Messaging webhook)",
        description="Public; one URL for every connected business account, one event per delivery. The body is "
        "verified before it is read: `TikTok-Signature: t=<unix seconds>,s=<hex HMAC-SHA256>` where the HMAC is "
        "keyed with the platform app's client secret over `<t>.<body as received>`; the timestamp must be within "
        "five minutes of now. A missing, stale or wrong signature answers 401 CALLBACK_SIGNATURE_INVALID and "
        "stores nothing; over 256 KiB 413 before anything is read. `im_receive_msg` is a user's message: "
        "`user_openid` (the business account) picks the practice's connection, and a body for an account not "
        "connected here is parked for operator review before the 200 (a park that cannot be stored answers 503 "
        "CALLBACK_NOT_STORED with Retry-After, so the platform retries). The message first claims its receipt "
        "(SHA-256 of content.message_id, per connection): a redelivery answers 200 with duplicates 1 and stores "
        "nothing. Then a worker files it under the practice's patient whose conversation already has the sender's "
        "platform user id (content.from_user.id), or whose customFields.shortVideoHandle is the sender's handle "
        "(content.from); a sender no patient stands for is parked in the practice's ingest-review queue "
        "(sender_not_matched: the platform gives no e-mail or number, which a new patient needs) and delivered "
        "when replayed after the handle is recorded. Text, shared posts (their link) and images (the image's "
        "reference is stored with the message before the 200, then copied to the practice's storage by a "
        "background queue) become inbox messages; the other events (im_send_msg echoes, read marks) change "
        "nothing and answer 200.",
        parameters=[OpenApiParameter("TikTok-Signature", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True)],
        request={JSON: OpenApiTypes.OBJECT},
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="Received, a duplicate, or parked.")},
        auth=[],
    )
    def post(self, request):
        self.require_media_type(request, JSON)
        secret = settings.SVC_SHORT_VIDEO_CLIENT_SECRET
        if not secret:
            raise CallbackNotStored("The short-video platform is not configured on this deployment.")
        header = request.headers.get(short_video.SIGNATURE_HEADER, "")
        self.verified(short_video.verify, secret, header, request.body, time.time())
        items = self.parsed(short_video.items, request.body)
        received = self.store(
            kind=Kind.SHORT_VIDEO,
            items=items,
            connections=selectors.connections_by_address(
                kind=Kind.SHORT_VIDEO, addresses={item.recipient for item in items}
            ),
        )
        return Response(_acknowledgement(received))
