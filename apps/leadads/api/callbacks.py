"""The ad platforms' callbacks (public, /webhooks/lead-ads/*). Each: the body cap (middleware, 413 before anything is
read), the platform's signature over the untouched bytes (refused: 401, nothing stored), then the body read and its
deliveries counted (over 100: 413 LEAD_BODY_TOO_MANY_DELIVERIES, nothing stored), then the body saved in the shared
intake in one INSERT before the 200 (apps.leadads.intake); routing, fetching and lead-making run in Celery."""

import logging
import time

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from apps.core.crypto import constant_time_equals
from apps.core.errors import UnsupportedMediaType, ValidationFailed
from apps.core.parsers import strict_form_fields
from apps.core.views import BaseApiView
from apps.core.wire import Camelized
from apps.leadads import deletion, intake, peer, platforms, selectors, signatures
from apps.leadads.api import serializers as s
from apps.leadads.errors import (
    GoogleKeyInvalid,
    HandshakeRefused,
    IntakeNotStored,
    RoutingTokenUnknown,
    SignatureInvalid,
    TooManyDeliveries,
    TrackerNotFound,
)
from apps.leadads.models import Platform
from apps.leadads.tasks import forward_form

logger = logging.getLogger("apps.leadads")

KIB = 1024
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
TAGS = ["lead-ads"]
MAX_CHALLENGE_CHARS = 256
REGIONS = ("eu", "us")
# A body the peer region forwarded was verified there within the tolerance; it may wait for its attempts here.
FORWARDED_TOLERANCE_SECONDS = 24 * 3600


class RawJson(BaseParser):
    """The views read the raw bytes themselves (signatures cover them); these only tell the schema the type."""

    media_type = JSON


class RawForm(BaseParser):
    media_type = FORM


def field_error(name: str, problem: str) -> ValidationFailed:
    """400 naming the platform's own field as the platform spells it (not camelCased like ours)."""
    return ValidationFailed(f"{name}: {problem}", details={"fields": Camelized({name: [problem]})})


def forwarded_from(request) -> str:
    """The region a body was forwarded from (the peer's intake), or "". Unauthenticated: it only stops a second
    forwarding and widens the short-video timestamp tolerance; the provider's signature is still required."""
    value = request.headers.get(peer.FORWARDED_HEADER, "")
    return value if value in REGIONS and value != settings.SVC_REGION else ""


class LeadCallbackView(BaseApiView):
    public = True
    parser_classes = [RawJson]
    error_statuses = ("401", "413", "415", "503")
    platform = ""

    def require_media_type(self, request, expected: str) -> None:
        if request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower() != expected:
            raise UnsupportedMediaType(f"The platform posts {expected}.")

    @staticmethod
    def verified(verify, *args) -> None:
        try:
            verify(*args)
        except signatures.SignatureRefused as refusal:
            raise SignatureInvalid(str(refusal)) from None

    def body(self, raw: bytes) -> platforms.Body:
        try:
            return platforms.parse(self.platform, raw)
        except platforms.TooManyDeliveries as refusal:
            raise TooManyDeliveries(refusal.count) from None
        except platforms.Malformed as error:
            raise field_error(error.field_name, error.problem) from None

    def save(self, request, raw: bytes, body: platforms.Body, *, signature: str = "", connection=None) -> Response:
        try:
            received = intake.receive(
                platform=self.platform,
                raw=raw,
                signature=signature,
                body=body,
                connection=connection,
                forwarded_from=forwarded_from(request),
            )
        except DatabaseError:
            logger.exception("%s lead body not stored", self.platform)
            raise IntakeNotStored() from None
        return Response({"received": True, "duplicate": received.duplicate, "deliveries": received.deliveries})


INTAKE_RULES = (
    "The body is saved in the shared intake (both regions' leads enter here) before the 200 and processed "
    "afterwards: each lead is routed to the connection of this region that owns its page, ad account or "
    "advertiser and becomes a lead-ad submission (received → processed, failed or needs_review; events "
    "lead_ad_submission.received and .status_changed). A body none of whose pages are connected here is forwarded "
    "to the other region's API (SVC_LEAD_ADS_PEER_URL) or, without one, parked for operator review. At most 100 "
    "deliveries a body (more: 413 LEAD_BODY_TOO_MANY_DELIVERIES, nothing stored) and three processing attempts "
    "within 24 hours a body. The identical body again answers 200 with duplicate true and stores nothing; a lead "
    "seen before (its platform lead id, per connection) makes nothing new and no new event. A body that could not be "
    "saved answers 503 LEAD_INTAKE_NOT_STORED with Retry-After. "
)


class MetaPlatformView(LeadCallbackView):
    max_body_bytes = 256 * KIB
    platform = Platform.META_PLATFORM

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_lead_ads_meta_platform_handshake",
        summary="Subscription handshake of the social ad platform",
        description="Public. The platform checks the callback URL with hub.mode=subscribe, hub.verify_token and "
        "hub.challenge; when the verify token is this deployment's (SVC_LEAD_ADS_META_VERIFY_TOKEN, compared in "
        "constant time) the challenge is echoed as text/plain, otherwise 403 HANDSHAKE_REFUSED.",
        parameters=[
            OpenApiParameter("hub.mode", OpenApiTypes.STR, required=True),
            OpenApiParameter("hub.verify_token", OpenApiTypes.STR, required=True),
            OpenApiParameter("hub.challenge", OpenApiTypes.STR, required=True),
        ],
        responses={(200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="The challenge.")},
        auth=[],
    )
    def get(self, request):
        mode, token = request.GET.get("hub.mode", ""), request.GET.get("hub.verify_token", "")
        challenge = request.GET.get("hub.challenge", "")
        for name, value in (("hub.mode", mode), ("hub.verify_token", token), ("hub.challenge", challenge)):
            if not value:
                raise field_error(name, "is required")
        if len(challenge) > MAX_CHALLENGE_CHARS:
            raise field_error("hub.challenge", f"is longer than {MAX_CHALLENGE_CHARS} characters")
        expected = settings.SVC_LEAD_ADS_META_VERIFY_TOKEN
        if mode != "subscribe" or not expected or not constant_time_equals(expected, token):
            raise HandshakeRefused()
        response = HttpResponse(challenge, content_type="text/plain; charset=utf-8")
        response["X-Content-Type-Options"] = "nosniff"
        return response

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_lead_ads_meta_platform",
        summary="Instant-form lead notifications of the social ad platform (Meta leadgen webhooks)",
        description="Public; one URL for every connected page. `X-Hub-Signature-256` must be `sha256=` and the hex "
        "HMAC-SHA256 of the body as received, keyed with the platform app's secret (SVC_LEAD_ADS_META_APP_SECRET); "
        "only then is the JSON read (missing or wrong: 401 LEAD_AD_SIGNATURE_INVALID). The body is {object: page, "
        "entry: [{id, changes: [{field: leadgen, value: {leadgen_id, page_id, form_id, ad_id, created_time}}]}]}; "
        "each leadgen change is one delivery, routed by page_id. The lead's answers are fetched from the "
        "platform's lead API with the page's token (GET /{leadgen_id}). Over 256 KiB: 413. " + INTAKE_RULES,
        parameters=[OpenApiParameter(signatures.META_HEADER, OpenApiTypes.STR, OpenApiParameter.HEADER, required=True)],
        request={JSON: OpenApiTypes.OBJECT},
        responses={200: s.IntakeAnswerSerializer},
        auth=[],
    )
    def post(self, request):
        self.require_media_type(request, JSON)
        raw = request.body
        header = request.headers.get(signatures.META_HEADER, "")
        self.verified(signatures.meta_verify, settings.SVC_LEAD_ADS_META_APP_SECRET, raw, header)
        return self.save(request, raw, self.body(raw), signature=header)


class ShortVideoView(LeadCallbackView):
    max_body_bytes = 2048 * KIB
    platform = Platform.SHORT_VIDEO

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_lead_ads_short_video",
        summary="Batched lead form submissions of the short-video ad platform",
        description="Public; one URL for every connected advertiser. `TikTok-Signature: t=<unix seconds>,s=<hex>` "
        "where s is the HMAC-SHA256, keyed with the platform app's secret (SVC_LEAD_ADS_SHORT_VIDEO_SECRET), of "
        "the timestamp, a full stop and the body as received; the timestamp must be within 300 seconds (missing, "
        "stale or wrong: 401 LEAD_AD_SIGNATURE_INVALID). The body is {leads: [{lead_id, advertiser_id, "
        "campaign_id, ad_id, form_id, create_time, is_test, ttclid, fields: [{name, value}], consent}]}; each lead "
        "is one delivery, routed by advertiser_id. Over 2 MiB: 413. " + INTAKE_RULES,
        parameters=[
            OpenApiParameter(signatures.SHORT_VIDEO_HEADER, OpenApiTypes.STR, OpenApiParameter.HEADER, required=True)
        ],
        request={JSON: OpenApiTypes.OBJECT},
        responses={200: s.IntakeAnswerSerializer},
        auth=[],
    )
    def post(self, request):
        self.require_media_type(request, JSON)
        raw = request.body
        header = request.headers.get(signatures.SHORT_VIDEO_HEADER, "")
        try:
            signatures.short_video_verify(settings.SVC_LEAD_ADS_SHORT_VIDEO_SECRET, raw, header)
        except signatures.SignatureRefused as refusal:
            stale = "tolerance" in str(refusal)
            if not (stale and forwarded_from(request)):
                raise SignatureInvalid(str(refusal)) from None
            self.verified(self._forwarded_verify, raw, header)
        return self.save(request, raw, self.body(raw), signature=header)

    @staticmethod
    def _forwarded_verify(raw: bytes, header: str) -> None:
        now = time.time()
        timestamp = next((p.strip()[2:] for p in header.split(",") if p.strip().startswith("t=")), "")
        if timestamp.isdigit() and 0 <= now - int(timestamp) <= FORWARDED_TOLERANCE_SECONDS:
            now = int(timestamp)  # within the forwarded window: checked as of its own time
        signatures.short_video_verify(settings.SVC_LEAD_ADS_SHORT_VIDEO_SECRET, raw, header, now=now)


class SearchAdsView(LeadCallbackView):
    max_body_bytes = 256 * KIB
    platform = Platform.SEARCH_ADS

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_lead_ads_search_ads",
        summary="Full lead form submissions of the search ad platform (Google Ads lead form webhook)",
        description="Public; the routing token picks the connection and grants nothing by itself (unknown or "
        "disconnected: 404). The JSON body's google_key must equal the key the connection was given (only its "
        "SHA-256 is kept; compared in constant time): missing or wrong is 401 LEAD_AD_KEY_INVALID and nothing is "
        "stored. The body (one lead) is {lead_id, form_id, campaign_id, gcl_id, is_test, user_column_data: "
        "[{column_id: FULL_NAME | EMAIL | PHONE_NUMBER | …, string_value}]}. A test lead (is_test) needs review. "
        "Over 256 KiB: 413. " + INTAKE_RULES,
        request={JSON: OpenApiTypes.OBJECT},
        responses={200: s.IntakeAnswerSerializer},
        auth=[],
    )
    def post(self, request, routing_token):
        connection = selectors.connection_for_routing_token(routing_token)
        if connection is None:
            raise RoutingTokenUnknown()
        self.require_media_type(request, JSON)
        raw = request.body
        body = self.body(raw)
        if not signatures.google_key_matches(connection.google_key_digest, body.google_key):
            raise GoogleKeyInvalid()
        return self.save(request, raw, body, connection=connection)


# --- deauthorize and data deletion (social platform) ----------------------------------------------------------------


class SignedRequestView(BaseApiView):
    public = True
    max_body_bytes = 64 * KIB
    parser_classes = [RawForm]
    error_statuses = ("401", "413", "415", "503")

    def user_ref(self, request) -> str:
        if request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower() != FORM:
            raise UnsupportedMediaType(f"The platform posts {FORM}.")
        values = strict_form_fields(request.body, field="body").get("signed_request") or [""]
        try:
            payload = signatures.signed_request_verify(settings.SVC_LEAD_ADS_META_APP_SECRET, values[-1])
        except signatures.SignatureRefused as refusal:
            raise SignatureInvalid(str(refusal)) from None
        user_ref = payload.get("user_id")
        if isinstance(user_ref, int) and not isinstance(user_ref, bool):
            user_ref = str(user_ref)
        if not isinstance(user_ref, str) or not user_ref or len(user_ref) > 64 or not user_ref.isprintable():
            raise field_error("signed_request.user_id", "is required (the person's app-scoped id)")
        return user_ref

    @staticmethod
    def forward_later(request, path: str, request_id=None) -> bool:
        if forwarded_from(request) or not peer.configured():
            return False
        try:
            forward_form.delay(path, request.body.decode("utf-8"), str(request_id) if request_id else None)
        except Exception:
            logger.warning("%s not queued for the peer region", path.rsplit("/", 1)[-1])
            return False
        return True


SIGNED_REQUEST = (
    "Public; the form field signed_request is `<base64url signature>.<base64url payload>` where the signature is "
    "the HMAC-SHA256, keyed with the platform app's secret, of the payload part as sent; it is checked before the "
    "payload is decoded (missing or wrong: 401 LEAD_AD_SIGNATURE_INVALID, nothing changed). The payload's "
    "algorithm must be HMAC-SHA256 and user_id names the person (the app-scoped id of whoever granted page "
    "tokens). The form is posted on to the other region's API as well (SVC_LEAD_ADS_PEER_URL), once. "
)


class DeauthorizeView(SignedRequestView):
    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_lead_ads_meta_platform_deauthorize",
        summary="The social platform's signed app deauthorization",
        description=SIGNED_REQUEST + "Every connection that person authorized is disconnected (page token wiped; "
        "lead_ad_connection.health_changed to disconnected). Repeating is harmless.",
        request={FORM: OpenApiTypes.OBJECT},
        responses={200: s.DeauthorizedSerializer},
        auth=[],
    )
    def post(self, request):
        user_ref = self.user_ref(request)
        try:
            deletion.deauthorize(user_ref=user_ref)
        except DatabaseError:
            logger.exception("deauthorization not applied")
            raise IntakeNotStored() from None
        self.forward_later(request, request.path)
        return Response({"received": True})


class DataDeletionView(SignedRequestView):
    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_lead_ads_meta_platform_data_deletion",
        summary="The social platform's signed data-deletion request; answers the tracker URL and confirmation code",
        description=SIGNED_REQUEST + "The person's connections are disconnected and the lead data received through "
        "them erased: each submission's answers, click id and platform lead id, and the raw bodies that carried "
        "them (patients already made from those leads are the practice's records and stay). Answers, as the "
        "platform expects, {url, confirmation_code} (snake_case): url is this region's tracker "
        "(GET /webhooks/lead-ads/meta-platform/data-deletion/{confirmationCode}).",
        request={FORM: OpenApiTypes.OBJECT},
        responses={
            200: OpenApiResponse(
                {
                    "type": "object",
                    "required": ["url", "confirmation_code"],
                    "properties": {"url": {"type": "string"}, "confirmation_code": {"type": "string"}},
                },
                description="The tracker and the confirmation code.",
            )
        },
        auth=[],
    )
    def post(self, request):
        user_ref = self.user_ref(request)
        forward = not forwarded_from(request) and peer.configured()
        try:
            done = deletion.data_deletion(user_ref=user_ref, forward=forward)
        except DatabaseError:
            logger.exception("data deletion not applied")
            raise IntakeNotStored() from None
        if forward and not self.forward_later(request, request.path, done.id):
            type(done).objects.filter(id=done.id).update(peer_status="failed")
        return Response(Camelized({"url": deletion.tracker_url(done.confirmation_code),
                                   "confirmation_code": done.confirmation_code}))  # fmt: skip


class DataDeletionTrackerView(BaseApiView):
    public = True

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_lead_ads_meta_platform_data_deletion_status",
        summary="The status of a data-deletion request in this region (the tracker URL)",
        description="Public; the confirmation code is the key. Unknown codes answer 404. status completed once the "
        "person's lead data is erased in this region; peerRegion tells whether the request was posted on to the "
        "other region (forwarding, forwarded, failed; null without a peer).",
        responses={200: s.TrackerSerializer},
        auth=[],
    )
    def get(self, request, code):
        found = deletion.tracker(code)
        if found is None:
            raise TrackerNotFound()
        return Response(
            s.TrackerSerializer(
                {
                    "confirmation_code": found.confirmation_code,
                    "status": found.status,
                    "region": found.region,
                    "requested_at": found.created_at,
                    "completed_at": found.completed_at,
                    "peer_region": found.peer_status or None,
                }
            ).data
        )
