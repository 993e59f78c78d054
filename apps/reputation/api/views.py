"""Reputation routes: settings, review sources and their sync, reviews and replies, review requests and private
feedback (tag reputation), and the public /r/{token} surface (tag reputation-public).

Public routes: the request token in the path is the boundary; an unknown, expired, tampered or erased token answers
the same 404. Every public request passes the abuse screen (per client address) first; a live token then takes from
its practice's bucket (reads and writes apart). JSON writes are capped at 256 KiB before parsing (413). A write that
cannot be stored answers 503 REPUTATION_NOT_STORED with Retry-After."""

import logging

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponseRedirect
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import FormParser
from rest_framework.response import Response

from apps.core.browser_pages import wants_html
from apps.core.limits import MinuteWindowLimit, TokenBucketLimit
from apps.core.pagination import offset_page
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView
from apps.reputation import pages, selectors, services
from apps.reputation.api import serializers as s
from apps.reputation.errors import NotInvited, ReputationNotStored, ReviewLinkNotFound
from apps.reputation.models import Feedback, Review, ReviewRequest, ReviewSource

logger = logging.getLogger("apps.reputation")

TAGS = ["reputation"]
PUBLIC_TAGS = ["reputation-public"]
PUBLIC_BODY_BYTES = 256 * 1024


def _practice(request, view) -> str | None:
    return str(view.review_request.organization_id) if view.review_request is not None else None


# The public abuse screen (300 a minute per client address; fails open like the other public surfaces) and two
# buckets per practice (the spec's Limits table has no reputation row: config-like 120/4 s for reads, 60/1 s for
# writes). Unknown tokens pass the screen only: they never reach a practice's bucket.
PUBLIC_SCREEN = MinuteWindowLimit("reputation.public", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True)
READ_BUCKET = TokenBucketLimit("reputation.read", setting="SVC_REPUTATION_READ_BUCKET", key=_practice)
WRITE_BUCKET = TokenBucketLimit("reputation.write", setting="SVC_REPUTATION_WRITE_BUCKET", key=_practice)

LIMITS = "Limits: {bucket} per practice; 300 per minute per client address."
READ_LIMITS = LIMITS.format(bucket="120 burst, 4 per second")
WRITE_LIMITS = LIMITS.format(bucket="60 burst, 1 per second")
TOKEN_PARAM = OpenApiParameter("token", OpenApiTypes.STR, OpenApiParameter.PATH, description="Review request token.")


class ReputationView(BaseApiView):
    scope_area = "reputation"


# --- settings -------------------------------------------------------------------------------------------------------


class SettingsView(ReputationView):
    permission = {"GET": "reputation:read", "PATCH": "settings:update"}

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_settings_read",
        responses={200: s.SettingsSerializer},
        summary="The practice's reputation settings (rating threshold, page question, automatic requests)",
        description="Permission reputation:read. ratingThreshold (default 4): a rating at or above it is pointed "
        "at the location's public review site; below it the comment becomes private feedback. "
        "autoRequestAfterAppointment (default false): a review request is sent autoRequestDelayMinutes (default "
        "120) after an appointment is completed, on autoRequestChannel (sms or email).",
    )
    def get(self, request):
        return Response(s.SettingsSerializer(services.settings_get(organization=self.organization)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_settings_update",
        request=s.SettingsWriteSerializer,
        responses={200: s.SettingsSerializer},
        summary="Change the rating threshold, the review page's question or the automatic request",
        description="Permission settings:update (owners and managers). ratingThreshold 1 to 5. "
        "autoRequestAfterAppointment switches the automatic review request after a completed appointment on or "
        "off; autoRequestDelayMinutes 0 to 10080 (7 days); autoRequestChannel sms or email. The automatic request "
        "follows the rules of POST /reputation/requests (marketing consent, opt-outs, blocks, an active review "
        "source at the appointment's location) and is skipped for an appointment that already has a request or a "
        "patient asked in the last 30 days. The setting is read again when the request is due.",
    )
    def patch(self, request):
        data = self.parse_body(s.SettingsWriteSerializer).validated_data
        row = services.settings_update(organization=self.organization, data=dict(data))
        return Response(s.SettingsSerializer(row).data)


# --- sources --------------------------------------------------------------------------------------------------------


class SourceListView(ReputationView):
    permission = {"GET": "reputation:read", "POST": "settings:update"}

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_sources_list",
        parameters=[s.SourceListQuerySerializer],
        responses={200: s.SourcePageSerializer},
        summary="The practice's review sources (a location's business profile), newest first",
        description="Permission reputation:read. {items, total, limit, offset}; locationId filters. Credentials "
        "are never returned (credentialKeys names which are set).",
    )
    def get(self, request):
        query = self.parse_query(s.SourceListQuerySerializer).validated_data
        rows, total = selectors.sources_page(
            organization=self.organization,
            location_id=query.get("location_id"),
            limit=query["limit"],
            offset=query["offset"],
        )
        return offset_page(
            s.SourceSerializer(rows, many=True).data, total, limit=query["limit"], offset=query["offset"]
        )

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_sources_create",
        request=s.SourceCreateSerializer,
        responses={201: s.SourceSerializer},
        summary="Connect a location's business profile as a review source",
        description="Permission settings:update. provider google_business_profile (the reference; Business "
        "Profile API v4), accountRef and locationRef (the platform's ids), reviewUrl (https: the public "
        "'write a review' link patients who rate highly are sent to) and credentials.accessToken (encrypted at "
        "rest, never returned). The same platform location twice is 400. The first sync imports the history "
        "without events.",
    )
    def post(self, request):
        data = self.parse_body(s.SourceCreateSerializer).validated_data
        source = services.source_create(organization=self.organization, data=dict(data))
        return Response(s.SourceSerializer(source).data, status=201)


class SourceView(ReputationView):
    permission = {"GET": "reputation:read", "PATCH": "settings:update"}

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_sources_read",
        responses={200: s.SourceSerializer},
        summary="Read one review source",
        description="Permission reputation:read. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.SourceSerializer(self.get_tenant_object(ReviewSource, id)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_sources_update",
        request=s.SourceUpdateSerializer,
        responses={200: s.SourceSerializer},
        summary="Rename, pause or resume a review source, change its review link or replace its access token",
        description="Permission settings:update. status paused stops its syncs (and new review requests for its "
        "location). Another practice's id answers 404.",
    )
    def patch(self, request, id):
        source = self.get_tenant_object(ReviewSource, id)
        data = self.parse_body(s.SourceUpdateSerializer).validated_data
        source = services.source_update(organization=self.organization, source=source, data=dict(data))
        return Response(s.SourceSerializer(source).data)


class SourceSyncView(ReputationView):
    permission = "reputation:update"
    error_statuses = ("409", "503")

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_sources_sync",
        request=None,
        responses={200: s.SyncResultSerializer},
        summary="Import the source's reviews now (the beat schedule does it every 15 minutes)",
        description="Permission reputation:update. Pages through the platform's reviews and stores one row per "
        "review (its version: updateTime and a hash of the content). The source's first import is historical "
        "and emits nothing; later syncs emit reputation_review.received / .updated for at most five changes per "
        "location (the most recent by updateTime, then review id); replaying a version emits nothing. A paused "
        "source is 409 REPUTATION_SOURCE_PAUSED; a platform refusal 409 REPUTATION_SOURCE_REFUSED "
        "(details.providerCode); an unreachable platform 503 REPUTATION_PROVIDER_UNAVAILABLE with Retry-After.",
    )
    def post(self, request, id):
        source = self.get_tenant_object(ReviewSource, id)
        result = services.source_sync(source_id=source.id)
        return Response(s.SyncResultSerializer(result).data)


# --- reviews --------------------------------------------------------------------------------------------------------


class ReviewListView(ReputationView):
    permission = "reputation:read"

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_reviews_list",
        parameters=[s.ReviewListQuerySerializer],
        responses={200: s.ReviewPageSerializer},
        summary="Imported reviews, newest first (filters: location, rating, replied)",
        description="Permission reputation:read. {items, total, limit, offset}, ordered by the platform's "
        "updateTime then id, newest first. replied=true: reviews with a reply (the platform's or ours).",
    )
    def get(self, request):
        query = self.parse_query(s.ReviewListQuerySerializer).validated_data
        rows, total = selectors.reviews_page(organization=self.organization, **query)
        return offset_page(
            s.ReviewSerializer(rows, many=True).data, total, limit=query["limit"], offset=query["offset"]
        )


class ReviewView(ReputationView):
    permission = "reputation:read"

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_reviews_read",
        responses={200: s.ReviewSerializer},
        summary="Read one review with its reply and the reply's status",
        description="Permission reputation:read. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.ReviewSerializer(self.get_tenant_object(Review, id)).data)


class ReviewReplyView(ReputationView):
    permission = "reputation:update"
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_reviews_reply",
        request=s.ReplySerializer,
        responses={202: s.ReviewSerializer},
        summary="Reply to a review in public: stored pending, then published to the platform",
        description="Permission reputation:update. The reply is stored with replyStatus pending and published "
        "by a background task (PUT …/reviews/{reviewId}/reply), retried on timeouts, 429 and 5xx (five attempts); "
        "it ends published or failed (replyError). Each change emits reputation_reply.status_changed (ids and "
        "statuses, never the text). Replying again replaces a published or failed reply; while one is pending, "
        "409 REPUTATION_REPLY_PENDING. Another practice's review is 404.",
    )
    def post(self, request, id):
        review = self.get_tenant_object(Review, id)
        data = self.parse_body(s.ReplySerializer).validated_data
        review = services.reply_create(
            organization=self.organization, review=review, comment=data["comment"], user=request.user
        )
        return Response(s.ReviewSerializer(review).data, status=202)


# --- requests -------------------------------------------------------------------------------------------------------


class RequestListView(ReputationView):
    permission = {"GET": "reputation:read", "POST": "reputation:update"}
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_requests_list",
        parameters=[s.RequestListQuerySerializer],
        responses={200: s.RequestPageSerializer},
        summary="Review requests sent to patients, newest first (filters: patient, status)",
        description="Permission reputation:read. {items, total, limit, offset}.",
    )
    def get(self, request):
        query = self.parse_query(s.RequestListQuerySerializer).validated_data
        rows, total = selectors.requests_page(organization=self.organization, **query)
        return offset_page(
            s.RequestSerializer(rows, many=True).data, total, limit=query["limit"], offset=query["offset"]
        )

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_requests_create",
        request=s.RequestCreateSerializer,
        responses={201: s.RequestSerializer},
        summary="Ask a patient to rate their visit: a message with their /r/{token} link",
        description="Permission reputation:update. Sent through the conversations pipeline on the practice's "
        "first connection of the channel (sms: an SMS or texting number; email), as a marketing message: the "
        "patient's consent for the channel is required and opt-outs and blocks are honoured. A message the "
        "pipeline refuses is 409 REVIEW_REQUEST_NOT_SENT with details.reason (NO_CONSENT, OPTED_OUT, "
        "CONTACT_BLOCKED, ADDRESS_SUPPRESSED, NO_ADDRESS, PATIENT_INACTIVE, CONNECTION_UNAVAILABLE) and nothing "
        "is stored. The location needs an active review source (409 REPUTATION_NO_REVIEW_SOURCE); appointmentId, "
        "when given, must be the patient's (400). The link is valid 30 days; the token is stored hashed and "
        "never returned. Status: sent → opened → rated → reviewed.",
    )
    def post(self, request):
        data = self.parse_body(s.RequestCreateSerializer).validated_data
        sent = services.request_create(
            organization=self.organization,
            user=request.user,
            patient=data["patient"],
            location=data["location"],
            channel=data["channel"],
            appointment=data.get("appointment"),
        )
        return Response(s.RequestSerializer(sent.request).data, status=201)


class RequestView(ReputationView):
    permission = "reputation:read"

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_requests_read",
        responses={200: s.RequestSerializer},
        summary="Read one review request and where the patient got to",
        description="Permission reputation:read. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.RequestSerializer(self.get_tenant_object(ReviewRequest, id)).data)


# --- feedback -------------------------------------------------------------------------------------------------------


class FeedbackListView(ReputationView):
    permission = "reputation:read"

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_feedback_list",
        parameters=[s.FeedbackListQuerySerializer],
        responses={200: s.FeedbackPageSerializer},
        summary="Private feedback left by patients who rated below the threshold, newest first",
        description="Permission reputation:read. {items, total, limit, offset}; locationId and patientId filter.",
    )
    def get(self, request):
        query = self.parse_query(s.FeedbackListQuerySerializer).validated_data
        rows, total = selectors.feedback_page(organization=self.organization, **query)
        return offset_page(
            s.FeedbackSerializer(rows, many=True).data, total, limit=query["limit"], offset=query["offset"]
        )


class FeedbackView(ReputationView):
    permission = "reputation:read"

    @extend_schema(
        tags=TAGS,
        operation_id="reputation_feedback_read",
        responses={200: s.FeedbackSerializer},
        summary="Read one piece of private feedback",
        description="Permission reputation:read. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.FeedbackSerializer(self.get_tenant_object(Feedback, id)).data)


# --- public: /r/{token} ---------------------------------------------------------------------------------------------


class FirstRenderer(BaseContentNegotiation):
    """HTML pages are made by the view; whatever DRF renders is the JSON envelope (a browser gets a page for it
    through apps.core.browser_pages)."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


NOT_FOUND = "An unknown, expired or tampered token: an HTML page for browsers, the ApiError envelope otherwise."
NOT_FOUND_RESPONSES = {
    (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NOT_FOUND),
    (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NOT_FOUND),
}
NOT_STORED = {503: OpenApiResponse(ApiErrorSerializer, description="Could not be stored; Retry-After.")}


class PublicReviewView(BaseApiView):
    public = True
    max_body_bytes = PUBLIC_BODY_BYTES
    content_negotiation_class = FirstRenderer
    review_request = None
    bucket: TokenBucketLimit = READ_BUCKET

    def load(self, request, token) -> ReviewRequest:
        """The abuse screen, the request (404 for any token that opens none), then the practice's bucket."""
        PUBLIC_SCREEN.check(request, self)
        self.review_request = services.request_for_token(token)
        if self.review_request is None:
            raise ReviewLinkNotFound()
        self.bucket.check(request, self)
        return self.review_request

    def question(self) -> str:
        return services.settings_get(organization=self.review_request.organization_id).question

    @staticmethod
    def stored(write):
        try:
            return write()
        except DatabaseError as exc:
            logger.warning("review answer not stored (%s); answered 503", type(exc).__name__)
            raise ReputationNotStored() from None


def _answer(outcome) -> dict:
    return {
        "outcome": "review" if outcome.invited else "feedback",
        "rating": outcome.rating,
        "review_url": outcome.review_url or None,
    }


class PublicPageView(PublicReviewView):
    http_method_names = ["get", "head"]

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="reputation_public_page",
        parameters=[TOKEN_PARAM],
        summary="The review page a patient opens from their request (JSON config, or the page for browsers)",
        description="Public; the request token is the boundary. Marks the request opened (reputation_request."
        "status_changed, once). An API client gets the practice's and location's names, the question and the "
        "request's status; a browser (Accept preferring text/html) gets the hosted page: star rating and an "
        "optional comment, posted to /r/{token}/page/rating. " + READ_LIMITS,
        responses={
            (200, "application/json"): s.PublicConfigSerializer,
            (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The rating page, for browsers."),
            **NOT_FOUND_RESPONSES,
        },
        auth=[],
    )
    def get(self, request, token):
        review_request = self.load(request, token)
        self.stored(lambda: services.request_open(review_request))
        question = self.question()
        if wants_html(request):
            if review_request.rating is not None:
                outcome = services.request_outcome(review_request)
                return pages.outcome_page(
                    request, review_request=review_request, token=token, question=question, outcome=outcome
                )
            return pages.rate_page(request, review_request=review_request, token=token, question=question)
        return Response(
            {
                "practice_name": review_request.organization.name,
                "location_name": review_request.location.name,
                "question": question or pages.DEFAULT_QUESTION,
                "status": review_request.status,
                "rated": review_request.rating is not None,
            }
        )


class PublicRatingView(PublicReviewView):
    bucket = WRITE_BUCKET

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="reputation_public_rating",
        parameters=[TOKEN_PARAM],
        request=s.RatingSerializer,
        summary="The patient rates the visit (1 to 5, optional comment)",
        description="Public; the request token is the boundary. JSON body at most 256 KiB (413 before parsing). "
        "At or above the practice's threshold (default 4) the answer is outcome review with reviewUrl, the "
        "location's public review page (then POST /r/{token}/reviewed); below it, outcome feedback: the comment "
        "is kept as private feedback for the practice (reputation_feedback.received, without the text). The "
        "request moves to rated. Answering again changes nothing and returns the first answer. An answer that "
        "could not be stored is 503 REPUTATION_NOT_STORED with Retry-After. " + WRITE_LIMITS,
        responses={
            200: s.RatingAnswerSerializer,
            413: OpenApiResponse(ApiErrorSerializer, description="Body over 256 KiB."),
            **NOT_FOUND_RESPONSES,
            **NOT_STORED,
        },
        auth=[],
    )
    def post(self, request, token):
        review_request = self.load(request, token)
        data = self.parse_body(s.RatingSerializer).validated_data
        outcome = self.stored(
            lambda: services.request_rate(review_request, rating=data["rating"], comment=data.get("comment", ""))
        )
        return Response(s.RatingAnswerSerializer(_answer(outcome)).data)


class PublicReviewedView(PublicReviewView):
    bucket = WRITE_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="reputation_public_reviewed",
        parameters=[TOKEN_PARAM],
        request=None,
        summary="The patient went on to the public review site",
        description="Public; the request token is the boundary; any body is ignored (at most 256 KiB). Allowed "
        "after a rating that pointed at the review site: the request moves to reviewed (once) and the answer "
        "repeats reviewUrl. Otherwise 409 REPUTATION_REVIEW_NOT_INVITED. " + WRITE_LIMITS,
        responses={
            200: s.RatingAnswerSerializer,
            413: OpenApiResponse(ApiErrorSerializer, description="Body over 256 KiB."),
            **NOT_FOUND_RESPONSES,
            **NOT_STORED,
        },
        auth=[],
    )
    def post(self, request, token):
        review_request = self.load(request, token)
        outcome = self.stored(lambda: services.request_reviewed(review_request))
        return Response(s.RatingAnswerSerializer(_answer(outcome)).data)


# --- the hosted page's form posts ------------------------------------------------------------------------------------

UNREADABLE = {
    (400, "application/json"): OpenApiResponse(
        ApiErrorSerializer, description="A body that cannot be read as a form (the envelope)."
    ),
}
PICK = "Choose a rating from 1 to 5 stars."


class PageRatingView(PublicReviewView):
    bucket = WRITE_BUCKET
    parser_classes = [FormParser]
    http_method_names = ["post"]

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="reputation_page_rating",
        parameters=[TOKEN_PARAM],
        request={"application/x-www-form-urlencoded": OpenApiTypes.OBJECT},
        summary="The hosted page's rating form (rating, comment): the thank-you page",
        description="Public; the same rules as POST /r/{token}/rating, for a browser's form post (fields rating "
        "1-5 and comment). Answers a page: with a high rating, a button to the public review site (POST "
        "/r/{token}/page/reviewed); otherwise a thank-you. A missing or unreadable rating shows the form again "
        "(400). " + WRITE_LIMITS,
        responses={
            (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The thank-you page."),
            (400, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The form again, with the problem."),
            **UNREADABLE,
            **NOT_FOUND_RESPONSES,
            **NOT_STORED,
        },
        auth=[],
    )
    def post(self, request, token):
        review_request = self.load(request, token)
        question = self.question()
        raw = request.data.get("rating", "")
        rating = int(raw) if isinstance(raw, str) and raw.strip() in {"1", "2", "3", "4", "5"} else None
        if rating is None:
            return pages.rate_page(
                request, review_request=review_request, token=token, question=question, problem=PICK, status=400
            )
        comment = request.data.get("comment", "")
        comment = comment[: s.MAX_COMMENT] if isinstance(comment, str) else ""
        outcome = self.stored(lambda: services.request_rate(review_request, rating=rating, comment=comment))
        return pages.outcome_page(
            request, review_request=review_request, token=token, question=question, outcome=outcome
        )


class PageReviewedView(PublicReviewView):
    bucket = WRITE_BUCKET
    parser_classes = [FormParser]
    http_method_names = ["post"]

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="reputation_page_reviewed",
        parameters=[TOKEN_PARAM],
        request=None,
        summary="The hosted page's 'Leave a public review' button: on to the review site",
        description="Public; marks the request reviewed like POST /r/{token}/reviewed and answers 303 to the "
        "location's public review page. A request not pointed there answers its thank-you page (409). " + WRITE_LIMITS,
        responses={
            303: OpenApiResponse(description="Redirected to the review site."),
            (409, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The thank-you page again."),
            **NOT_FOUND_RESPONSES,
            **NOT_STORED,
        },
        auth=[],
    )
    def post(self, request, token):
        review_request = self.load(request, token)
        try:
            outcome = self.stored(lambda: services.request_reviewed(review_request))
        except NotInvited:
            outcome = services.request_outcome(review_request)
            return pages.outcome_page(
                request,
                review_request=review_request,
                token=token,
                question=self.question(),
                outcome=outcome,
                status=409,
            )
        return HttpResponseRedirect(outcome.review_url, status=303)
