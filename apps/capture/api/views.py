"""Lead capture routes: the public POST /capture/{token}, capture-form settings, and the intake-review queue."""

import logging

from django.conf import settings
from django.db import DatabaseError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from apps.capture import selectors, services
from apps.capture.api import receive
from apps.capture.api import serializers as s
from apps.capture.api.wire import MappingJSONParser, MappingJSONRenderer
from apps.capture.browser_answers import browser_refusal, browser_thanks
from apps.capture.errors import CaptureNotFound, DeliveryConflict
from apps.capture.models import CaptureForm, IntakeReviewItem
from apps.core.errors import ApiError, ServiceUnavailable
from apps.core.limits import MinuteWindowLimit, TokenBucketLimit
from apps.core.pagination import offset_page
from apps.core.views import BaseApiView

logger = logging.getLogger("apps.capture")

CAPTURE_TAGS = ["capture"]
REVIEW_TAGS = ["intake-review"]
CAPTURE_BODY_BYTES = 256 * 1024

# Public abuse screen: 300 a minute per client address (IPv4 address, IPv6 /64); no address passes. Fails open: a
# Redis outage must not cost a practice its leads.
PUBLIC_SCREEN = MinuteWindowLimit("capture.public", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True)
FORM_BUCKET = TokenBucketLimit(
    "capture.form", setting="SVC_CAPTURE_FORM_BUCKET", key=lambda request, view: str(view.form.id)
)


class RawBody(BaseParser):
    """The capture view reads the body itself (raw bytes for signatures, Django's form parsing for browsers);
    this only tells the schema which media types it takes."""

    media_type = "*/*"


class NotStored(ServiceUnavailable):
    code = "CAPTURE_NOT_STORED"
    message = "The submission could not be stored; resend it (same delivery id) shortly."
    retry_after = 30


class CaptureView(BaseApiView):
    public = True
    max_body_bytes = CAPTURE_BODY_BYTES
    parser_classes = [RawBody]
    form: CaptureForm | None = None

    @extend_schema(
        tags=CAPTURE_TAGS,
        operation_id="capture_submit",
        summary="Submit a lead to a capture form (public or signed mode)",
        description=(
            "**Public mode**: a browser form post (application/x-www-form-urlencoded or multipart/form-data, at "
            "most 10 files) or JSON, without credentials. An optional `X-Service-Delivery-Id` header (or a "
            "`_svc_event_id` form field / `_svc.event_id` JSON member) makes retries idempotent.\n\n"
            "**Signed mode**: application/json only and no query parameters. Headers `X-Service-Delivery-Id` "
            "(1 to 200 characters, unique per form), `X-Service-Timestamp` (Unix seconds, within 5 minutes) and "
            "`X-Service-Signature: v1=<hex>` — HMAC-SHA256 with the form's signing secret over "
            '`"<timestamp>.<delivery id>.<raw body>"` (hex in either case; during a rotation either secret). The '
            "body is a JSON object; a `_svc.event_id` in it must equal the delivery id.\n\n"
            "The same delivery id with identical content answers 201 again and records nothing new; with different "
            "content 409 CAPTURE_DELIVERY_CONFLICT. Unknown, paused and archived tokens answer the same 404. Bodies "
            "over 256 KiB answer 413 before parsing. A stored submission answers 201 even when turning it into a "
            "lead must wait (it is retried); one that could not be stored answers 503 CAPTURE_NOT_STORED with "
            "Retry-After, and nothing was kept: resend with the same delivery id.\n\n"
            "Fields: the default names (first_name, last_name, email, phone, telephone, date_of_birth, gender, "
            "address, address_line_2, city, county, postcode, country, preferred_contact_method, "
            "preferred_contact_time, treatment, location, message, additional_information, marketing_consent), "
            "marketing parameters (utm_*, gclid, fbclid, msclkid, ttclid and other click ids, landing_url, "
            "referrer) and anything else, kept as custom fields or mapped by the form's field mapping. Before the "
            "mapping is confirmed, submissions are parked and replayed on confirmation.\n\n"
            "Limits: 200 burst, 5 per second per form; public posts and unknown tokens also 300 per minute per "
            "client address (IPv4 address or IPv6 /64)."
        ),
        parameters=[
            OpenApiParameter("X-Service-Delivery-Id", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False),
            OpenApiParameter("X-Service-Timestamp", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False),
            OpenApiParameter("X-Service-Signature", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False),
        ],
        request={
            "application/json": OpenApiTypes.OBJECT,
            "application/x-www-form-urlencoded": OpenApiTypes.OBJECT,
            "multipart/form-data": OpenApiTypes.OBJECT,
        },
        responses={
            201: s.CaptureAcceptedSerializer,
            401: OpenApiResponse(description="Signed mode: bad signature or stale timestamp."),
            409: OpenApiResponse(description="Delivery id reused with different content."),
            413: OpenApiResponse(description="Body over 256 KiB."),
            415: OpenApiResponse(description="Content type not accepted in this mode."),
            503: OpenApiResponse(description="Could not be stored; Retry-After."),
        },
        auth=[],
    )
    def post(self, request, token):
        # The form as this process last read it (no statement), or read now. The store confirms the snapshot in its
        # one INSERT; a snapshot that no longer holds, or any refusal decided on one, is decided again on a fresh
        # read, so form changes take effect at once.
        self.form, remembered = selectors.form_for_token_remembered(token)
        screened = self._screen(request)
        if not remembered:
            return self._receive(request)
        try:
            return self._receive(request)
        except (DeliveryConflict, NotStored):
            raise  # decided on the stored rows, not on the snapshot
        except (ApiError, services.FormChanged):
            pass
        selectors.forget_form(token)
        self.form = selectors.form_for_token(token)
        if not screened:
            self._screen(request)
        elif self.form is None:
            raise CaptureNotFound()
        try:
            return self._receive(request)
        except services.FormChanged:
            raise NotStored() from None  # changed again while this post was read: resend (same delivery id)

    def _screen(self, request) -> bool:
        """The limits: the address screen (True when applied) and the form's bucket; 404 for no form."""
        # The address screen is for unauthenticated traffic: public posts and unknown tokens. A signed post proves
        # its sender with the HMAC and is bounded by the form's bucket (a sender's server posts from one address).
        screened = self.form is None or self.form.delivery_mode == CaptureForm.Mode.PUBLIC
        if screened:
            PUBLIC_SCREEN.check(request, self)
        if self.form is None:
            raise CaptureNotFound()
        FORM_BUCKET.check(request, self)
        return screened

    def _receive(self, request):
        if self.form.delivery_mode == CaptureForm.Mode.SIGNED:
            incoming = receive.read_signed(request, self.form)
        else:
            incoming = receive.read_public(request)
        # A browser's form post (the hosted form page) gets a page: the form again when it cannot become a lead.
        refusal = browser_refusal(request, self.form, incoming.fields if incoming is not None else None)
        if refusal is not None:
            return refusal
        if incoming is not None:
            try:
                services.capture_receive(form=self.form, incoming=incoming)
            except (DatabaseError, OSError, services.AttachmentsNotStored) as exc:
                logger.warning("capture not stored (%s); answered 503", type(exc).__name__)
                raise NotStored() from None
        thanks = browser_thanks(request, self.form)
        return thanks if thanks is not None else Response({"ok": True}, status=201)


# --- settings: capture forms ----------------------------------------------------------------------------------------


def _capture_url(token: str) -> str:
    return f"{settings.SVC_BASE_URL}/capture/{token}"


def render_forms(forms: list[CaptureForm], *, organization, extra: dict | None = None) -> list[dict]:
    parked = selectors.parked_summary(organization=organization, forms=forms)
    rendered = []
    for form in forms:
        token = services.form_token(form)
        count, unmapped = parked.get(form.id, (0, []))
        public_form = form.delivery_mode == CaptureForm.Mode.PUBLIC and form.kind == CaptureForm.Kind.FORM_SUBMISSIONS
        rendered.append(
            {
                "id": form.id,
                "name": form.name,
                "kind": form.kind,
                "delivery_mode": form.delivery_mode,
                "status": form.status,
                "capture_url": _capture_url(token),
                "form_page_url": f"{settings.SVC_BASE_URL}/form-page/{token}" if public_form else None,
                "default_treatment_id": form.default_treatment_id,
                "lead_source_id": form.lead_source_id,
                "location_id": form.location_id,
                "field_mapping": form.field_mapping,
                "mapping_confirmed_at": form.mapping_confirmed_at,
                "parked_submissions": count,
                "unmapped_fields": unmapped,
                "signing": {
                    "enabled": form.delivery_mode == CaptureForm.Mode.SIGNED,
                    "previous_secret_expires_at": form.previous_secret_expires_at
                    if form.previous_secret_encrypted
                    else None,
                },
                "archived_at": form.archived_at,
                "created_at": form.created_at,
                "updated_at": form.updated_at,
            }
            | (extra or {})
        )
    return rendered


class CaptureFormsView(BaseApiView):
    scope_area = "settings"
    error_statuses = ("409",)
    # fieldMapping's keys are the sender's field names: kept verbatim both ways.
    parser_classes = [MappingJSONParser]
    renderer_classes = [MappingJSONRenderer]

    def form(self, id) -> CaptureForm:
        return self.get_tenant_object(CaptureForm, id)

    def one(self, form: CaptureForm, *, status: int = 200, **extra) -> Response:
        return Response(render_forms([form], organization=self.organization, extra=extra)[0], status=status)


class FormListView(CaptureFormsView):
    permission = {"GET": "settings:read", "POST": "settings:update"}

    @extend_schema(
        tags=CAPTURE_TAGS,
        operation_id="capture_forms_list",
        parameters=[s.CaptureFormListQuerySerializer],
        responses={200: s.CaptureFormListSerializer},
        summary="The practice's capture forms (custom endpoints), newest first",
        description="Permission settings:read. {items, total, limit, offset}; archived forms are left out unless "
        "includeArchived=true or status=archived.",
    )
    def get(self, request):
        query = self.parse_query(s.CaptureFormListQuerySerializer).validated_data
        forms, total = selectors.forms_page(organization=self.organization, **query)
        items = render_forms(forms, organization=self.organization)
        return offset_page(items, total, limit=query["limit"], offset=query["offset"])

    @extend_schema(
        tags=CAPTURE_TAGS,
        request=s.CaptureFormWriteSerializer,
        responses={201: s.CaptureFormCreatedSerializer},
        summary="Create a capture form (signed mode: the signing secret is shown once, in this response)",
        description="Permission settings:update. A form starts parked until its field mapping is confirmed "
        "(submissions are stored and replayed on confirmation). In signed mode signingSecret is in this response "
        "alone.",
    )
    def post(self, request):
        data = self.parse_body(s.CaptureFormWriteSerializer).validated_data
        created = services.form_create(organization=self.organization, user=request.user, data=dict(data))
        return self.one(created.form, status=201, signing_secret=created.signing_secret)


class FormView(CaptureFormsView):
    permission = {"GET": "settings:read", "PATCH": "settings:update"}

    @extend_schema(
        tags=CAPTURE_TAGS,
        responses={200: s.CaptureFormSerializer},
        summary="Read a capture form",
        description="Permission settings:read. The form with its capture URL, hosted form page URL, parked "
        "submission count and the field names still to map.",
    )
    def get(self, request, id):
        return self.one(self.form(id))

    @extend_schema(
        tags=CAPTURE_TAGS,
        request=s.CaptureFormUpdateSerializer,
        responses={200: s.CaptureFormSerializer},
        summary="Update a capture form's name, kind, defaults or field mapping (archived forms: 409)",
        description="Permission settings:update. Changes name, kind, defaults (location, treatment, lead source) or "
        "the field mapping. An archived form answers 409.",
    )
    def patch(self, request, id):
        form = self.form(id)
        data = self.parse_body(s.CaptureFormUpdateSerializer, partial=True).validated_data
        return self.one(services.form_update(organization=self.organization, form=form, data=dict(data)))


def _status_view(status: str, summary: str, description: str):
    class StatusView(CaptureFormsView):
        permission = "settings:update"

        @extend_schema(
            tags=CAPTURE_TAGS,
            request=None,
            responses={200: s.CaptureFormSerializer},
            summary=summary,
            description=description,
        )
        def post(self, request, id):
            form = services.form_set_status(organization=self.organization, form=self.form(id), status=status)
            return self.one(form)

    StatusView.__name__ = StatusView.__qualname__ = f"Form{status.title()}View"
    return StatusView


FormPauseView = _status_view(
    CaptureForm.Status.PAUSED,
    "Pause a capture form (its token answers 404 until resumed)",
    "Permission settings:update. While paused, POST /capture/{token} answers the same 404 as an unknown token and "
    "records nothing.",
)
FormResumeView = _status_view(
    CaptureForm.Status.ACTIVE,
    "Resume a paused capture form",
    "Permission settings:update. The token accepts submissions again. An archived form answers 409.",
)
FormArchiveView = _status_view(
    CaptureForm.Status.ARCHIVED,
    "Archive a capture form (final; its token answers 404)",
    "Permission settings:update. Archiving is final: the token answers 404 from now on. Parked submissions can "
    "still be confirmed and replayed.",
)


class RegenerateTokenView(CaptureFormsView):
    permission = "settings:update"

    @extend_schema(
        tags=CAPTURE_TAGS,
        request=None,
        responses={200: s.CaptureFormSerializer},
        summary="New routing token: the capture URL changes and the old one stops at once",
        description="Permission settings:update. A new routing token: the old capture URL answers 404 at once (the "
        "same answer as an unknown token).",
    )
    def post(self, request, id):
        form, _token = services.form_regenerate_token(organization=self.organization, form=self.form(id))
        return self.one(form)


def _secret_view(action, summary: str, description: str):
    class SecretView(CaptureFormsView):
        permission = "settings:update"

        @extend_schema(
            tags=CAPTURE_TAGS,
            request=None,
            responses={200: s.CaptureFormSecretSerializer},
            summary=summary,
            description=description,
        )
        def post(self, request, id):
            form, secret = action(organization=self.organization, form=self.form(id))
            return self.one(form, signing_secret=secret)

    SecretView.__name__ = SecretView.__qualname__ = f"{action.__name__.title().replace('_', '')}View"
    return SecretView


SigningEnableView = _secret_view(
    services.signing_enable,
    "Enable signing: signed mode with a new secret (shown once); unsigned posts stop at once",
    "Permission settings:update. signingSecret is in this response alone. Signed posts are application/json only, "
    "no query string, with X-Service-Delivery-Id, X-Service-Timestamp (± 5 minutes) and X-Service-Signature: "
    'v1=<hex HMAC-SHA256 of "timestamp.deliveryId.rawBody">; see POST /capture/{token}.',
)
SecretRotateView = _secret_view(
    services.secret_rotate,
    "Rotate the signing secret (shown once); the previous one stays valid 24 hours",
    "Permission settings:update. The new signingSecret is in this response alone; for 24 hours signatures made "
    "with the previous secret are accepted too (end that early with signing/revoke-previous).",
)


class SigningDisableView(CaptureFormsView):
    permission = "settings:update"

    @extend_schema(
        tags=CAPTURE_TAGS,
        request=None,
        responses={200: s.CaptureFormSerializer},
        summary="Disable signing: public mode, secrets discarded",
        description="Permission settings:update. Back to public mode: unsigned posts are accepted again and the "
        "current and previous secrets are discarded.",
    )
    def post(self, request, id):
        return self.one(services.signing_disable(organization=self.organization, form=self.form(id)))


class RevokePreviousSecretView(CaptureFormsView):
    permission = "settings:update"

    @extend_schema(
        tags=CAPTURE_TAGS,
        request=None,
        responses={200: s.CaptureFormSerializer},
        summary="Stop accepting the previous signing secret before its 24 hours are up",
        description="Permission settings:update. Ends the 24-hour overlap after a rotation at once: only the current "
        "secret verifies signatures.",
    )
    def post(self, request, id):
        return self.one(services.secret_revoke_previous(organization=self.organization, form=self.form(id)))


class MappingConfirmView(CaptureFormsView):
    permission = "settings:update"

    @extend_schema(
        tags=CAPTURE_TAGS,
        request=s.MappingConfirmSerializer,
        responses={200: s.MappingConfirmedSerializer},
        summary="Confirm the field mapping (optionally replacing it); parked submissions are replayed",
        description="Permission settings:update. Confirms the field mapping (a mapping in the body replaces it "
        "first); the form's parked submissions are then processed, oldest first, by a background task. An archived "
        "form's parked submissions can still be confirmed and replayed.",
    )
    def post(self, request, id):
        form = self.form(id)
        data = self.parse_body(s.MappingConfirmSerializer).validated_data
        form, replaying = services.mapping_confirm(
            organization=self.organization, form=form, mapping=data.get("field_mapping")
        )
        rendered = render_forms([form], organization=self.organization)[0]
        return Response({"form": rendered, "replaying": replaying})


class SubmissionListView(CaptureFormsView):
    permission = "settings:read"

    @extend_schema(
        tags=CAPTURE_TAGS,
        parameters=[s.SubmissionListQuerySerializer],
        responses={200: s.SubmissionPageSerializer},
        summary="A capture form's submissions, newest first (field names only: values stay with the patient)",
        description="Permission settings:read. Each submission's status (received, parked, processed, rejected), the "
        "field names it carried (never the values) and the patient and journey it made or matched.",
    )
    def get(self, request, id):
        form = self.form(id)
        query = self.parse_query(s.SubmissionListQuerySerializer).validated_data
        submissions, total = selectors.submissions_page(organization=self.organization, form=form, **query)
        items = [
            {
                "id": item.id,
                "delivery_id": item.delivery_id,
                "status": item.status,
                "field_names": sorted(item.fields),
                "patient_id": item.patient_id,
                "patient_created": item.patient_created,
                "journey_id": item.journey_id,
                "problem": item.problem,
                "attempts": item.attempts,
                "created_at": item.created_at,
                "processed_at": item.processed_at,
            }
            for item in submissions
        ]
        return offset_page(items, total, limit=query["limit"], offset=query["offset"])


# --- intake review ------------------------------------------------------------------------------------------------


class ReviewListView(BaseApiView):
    scope_area = "patients"
    permission = "patient:read"

    @extend_schema(
        tags=REVIEW_TAGS,
        operation_id="intake_review_list",
        parameters=[s.ReviewListQuerySerializer],
        responses={200: s.ReviewPageSerializer},
        summary="Captured leads that need a person (a form default was archived, or the lead matched an archived "
        "patient), newest first",
        description="Permission patient:read. Items opened by lead capture when a form's default location, treatment "
        "or lead source was archived after the form was set up, when a lead matched an archived patient, or when a "
        "submission had no usable e-mail or phone (reason no_usable_contact, with submittedFields as sent and no "
        "patient).",
    )
    def get(self, request):
        query = self.parse_query(s.ReviewListQuerySerializer).validated_data
        items, total = selectors.review_page(organization=self.organization, **query)
        rendered = s.ReviewItemSerializer(items, many=True).data
        return offset_page(rendered, total, limit=query["limit"], offset=query["offset"])


def _review_close_view(status: str, summary: str, description: str):
    class ReviewCloseView(BaseApiView):
        scope_area = "patients"
        permission = "patient:update"
        error_statuses = ("409",)

        @extend_schema(
            tags=REVIEW_TAGS,
            request=s.ReviewCloseSerializer,
            responses={200: s.ReviewItemSerializer},
            summary=summary,
            description=description,
        )
        def post(self, request, id):
            item = self.get_tenant_object(IntakeReviewItem, id)
            note = self.parse_body(s.ReviewCloseSerializer).validated_data["note"]
            item = services.review_close(
                organization=self.organization, user=request.user, item=item, status=status, note=note
            )
            return Response(s.ReviewItemSerializer(item).data)

    ReviewCloseView.__name__ = ReviewCloseView.__qualname__ = f"Review{status.title()}View"
    return ReviewCloseView


ReviewResolveView = _review_close_view(
    IntakeReviewItem.Status.RESOLVED,
    "Resolve an intake-review item",
    "Permission patient:update. Closes the item as resolved, with a note. An item already closed answers 409 "
    "INTAKE_REVIEW_ITEM_CLOSED.",
)
ReviewDismissView = _review_close_view(
    IntakeReviewItem.Status.DISMISSED,
    "Dismiss an intake-review item",
    "Permission patient:update. Closes the item as dismissed, with a note. An item already closed answers 409 "
    "INTAKE_REVIEW_ITEM_CLOSED.",
)
