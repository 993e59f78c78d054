"""Online booking routes: the booking-page settings (tag scheduling) and the public /booking/… surface (tag booking).

Public routes: the token (or management uid) in the path is the boundary; an unknown, rotated, archived or inactive
token answers the same 404. Every public request passes the abuse screen (per client address) first; known pages then
take from their practice's bucket for the route. JSON writes are capped at 256 KiB before parsing (413). A write that
cannot be stored (the database is unavailable) answers 503 BOOKING_NOT_STORED with Retry-After.
"""

from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, DataError, IntegrityError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from apps.booking import pages, selectors, services
from apps.booking.api import serializers as s
from apps.booking.errors import BookingNotFound, NotStored
from apps.core.browser_pages import wants_html
from apps.core.errors import NotFound, ValidationFailed
from apps.core.limits import MinuteWindowLimit, TokenBucketLimit
from apps.core.views import BaseApiView
from apps.core.wire import Camelized, datetime_string
from apps.journeys.public import Treatment
from apps.tasks.public import practice_timezone

PUBLIC_TAGS = ["booking"]
SETTINGS_TAGS = ["scheduling"]
BOOKING_BODY_BYTES = 256 * 1024

# Public abuse screen: per client address (IPv4 address, IPv6 /64), before any token is looked up. Fails open.
PUBLIC_SCREEN = MinuteWindowLimit("booking.public", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True)


def _practice(request, view) -> str | None:
    return str(view.page.organization_id) if view.page is not None else None


CONFIG_BUCKET = TokenBucketLimit("booking.config", setting="SVC_BOOKING_CONFIG_BUCKET", key=_practice)
AVAILABILITY_BUCKET = TokenBucketLimit("booking.availability", setting="SVC_BOOKING_AVAILABILITY_BUCKET", key=_practice)
HOLD_BUCKET = TokenBucketLimit("booking.hold", setting="SVC_BOOKING_HOLD_BUCKET", key=_practice)
COMPLETE_BUCKET = TokenBucketLimit("booking.complete", setting="SVC_BOOKING_COMPLETE_BUCKET", key=_practice)

TOKEN_PARAM = OpenApiParameter("token", OpenApiTypes.STR, OpenApiParameter.PATH, description="Booking-page token.")
UID_PARAM = OpenApiParameter("uid", OpenApiTypes.STR, OpenApiParameter.PATH, description="Booking management uid.")


# --- settings: /settings/booking-pages --------------------------------------------------------------------------------


class PagesView(BaseApiView):
    scope_area = "settings"

    def page(self, id):
        page = selectors.page_get(organization=self.organization, page_id=id)
        if page is None:
            raise NotFound("No such booking page.")
        return page


class PageListView(PagesView):
    permission = {"GET": "settings:read", "POST": "settings:update"}

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="booking_pages_list",
        summary="List the practice's online booking pages",
        description="Permission settings:read. Each page's token, what it offers and its booking rules.",
        responses={200: s.PageListSerializer},
    )
    def get(self, request):
        pages = selectors.page_list(organization=self.organization)
        return Response({"items": s.PageSerializer(pages, many=True).data})

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="booking_pages_create",
        summary="Create a booking page (published at once behind a new token)",
        description="Permission settings:update. Empty treatment, location or practitioner lists offer every active "
        "one of the practice. Defaults: lead time 120 minutes, horizon 28 days, 30-minute slots, changes online "
        "until 1440 minutes before the appointment, and a marketing-consent wording (consentText) asking for news "
        "and offers by e-mail and text message.",
        request=s.PageWriteSerializer,
        responses={201: s.PageSerializer},
    )
    def post(self, request):
        body = self.parse_body(s.PageWriteSerializer)
        page = services.page_create(organization=self.organization, data=body.validated_data)
        return Response(s.PageSerializer(self.page(page.id)).data, status=201)


class PageView(PagesView):
    permission = {"GET": "settings:read", "PATCH": "settings:update", "DELETE": "settings:update"}

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="booking_pages_read",
        summary="Read a booking page",
        description="Permission settings:read.",
        responses={200: s.PageSerializer},
    )
    def get(self, request, id):
        return Response(s.PageSerializer(self.page(id)).data)

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="booking_pages_update",
        summary="Change a booking page's offer or rules",
        description="Permission settings:update. Lists replace the whole list. Holds and bookings already made "
        "keep their times.",
        request=s.PagePatchSerializer,
        responses={200: s.PageSerializer},
    )
    def patch(self, request, id):
        page = self.page(id)
        body = self.parse_body(s.PagePatchSerializer, partial=True)
        services.page_update(organization=self.organization, page=page, data=body.validated_data)
        return Response(s.PageSerializer(self.page(id)).data)

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="booking_pages_archive",
        summary="Archive a booking page: its token answers 404 from now on",
        description="Permission settings:update. Bookings made through it stay manageable by their uid.",
        responses={204: None},
    )
    def delete(self, request, id):
        services.page_archive(organization=self.organization, page=self.page(id))
        return Response(status=204)


class PageRotateTokenView(PagesView):
    permission = "settings:update"

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="booking_pages_rotate_token",
        summary="Rotate a booking page's token",
        description="Permission settings:update. A new token; the old one answers 404 at once.",
        request=None,
        responses={200: s.PageSerializer},
    )
    def post(self, request, id):
        services.page_rotate_token(organization=self.organization, page=self.page(id))
        return Response(s.PageSerializer(self.page(id)).data)


# --- public: /booking/{token}/… ---------------------------------------------------------------------------------------


class FirstRenderer(BaseContentNegotiation):
    """The pages are HTML responses made by the view; whatever DRF renders is the JSON envelope (a browser gets a
    page for it through apps.core.browser_pages)."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class PublicBookingView(BaseApiView):
    public = True
    max_body_bytes = BOOKING_BODY_BYTES
    bucket: TokenBucketLimit | None = None
    page = None

    def load_page(self, request, token):
        """The abuse screen, the page (404 for any token that publishes none), then the practice's bucket."""
        PUBLIC_SCREEN.check(request, self)
        self.page = selectors.page_for_token(token)
        if self.page is None:
            raise BookingNotFound()
        if self.bucket is not None:
            self.bucket.check(request, self)
        return self.page


def slot_rows(slots) -> list[Camelized]:
    """The slots as SlotSerializer writes them (the schema), built directly: a 4-week page offers thousands, and
    its practitioners share their start times, so each id and instant is written once."""
    texts: dict = {}

    def text(value):
        found = texts.get(value)
        if found is None:
            found = texts[value] = datetime_string(value) if isinstance(value, datetime) else str(value)
        return found

    return [
        Camelized(
            practitionerId=text(slot.practitioner_id),
            locationId=text(slot.location_id) if slot.location_id is not None else None,
            startsAt=text(slot.starts_at),
            endsAt=text(slot.ends_at),
        )
        for slot in slots
    ]


def _stored(write):
    """Run a public write; a database that cannot take it is 503 with Retry-After (nothing was kept)."""
    try:
        return write()
    except (IntegrityError, DataError):
        raise  # not an outage: a conflict, or a value the database refuses (validation's business, never "retry")
    except DatabaseError:
        raise NotStored() from None


class PublicConfigView(PublicBookingView):
    bucket = CONFIG_BUCKET

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_public_config",
        summary="A booking page's configuration: practice, timezone, treatments, locations, practitioners, rules",
        description="Public; the token is the boundary. consentText is the marketing-consent wording to show "
        "beside an unticked checkbox (see marketingConsent of the complete route). Bucket: 120 burst, 4 per second "
        "per practice.",
        parameters=[TOKEN_PARAM],
        responses={200: s.PublicConfigSerializer},
        auth=[],
    )
    def get(self, request, token):
        page = self.load_page(request, token)
        offer = selectors.page_offer(page)
        first_day, last_day = selectors.bookable_days(page)
        return Response(
            s.PublicConfigSerializer(
                {
                    "name": page.name,
                    "practice_name": page.organization.name,
                    "timezone": str(practice_timezone(page.organization)),
                    "treatments": offer.treatments,
                    "locations": offer.locations,
                    "practitioners": offer.practitioners,
                    "lead_time_minutes": page.lead_time_minutes,
                    "horizon_days": page.horizon_days,
                    "slot_minutes": page.slot_minutes,
                    "first_day": first_day,
                    "last_day": last_day,
                    "consent_text": page.consent_text,
                }
            ).data
        )


class PublicAvailabilityView(PublicBookingView):
    bucket = AVAILABILITY_BUCKET

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_public_availability",
        summary="Free slots of a booking page between two local days",
        description="Public. Slots of the page's length from the practitioners' working hours, minus appointments "
        "holding time and other visitors' holds, no sooner than the lead time and within the horizon, in the "
        "practice's timezone (instants in UTC). end - start may not exceed the horizon. Bucket: 120 burst, 2 per "
        "second per practice.",
        parameters=[TOKEN_PARAM, s.AvailabilityQuerySerializer],
        responses={200: s.AvailabilitySerializer},
        auth=[],
    )
    def get(self, request, token):
        page = self.load_page(request, token)
        data = self.parse_query(s.AvailabilityQuerySerializer).validated_data
        if (data["end"] - data["start"]).days > page.horizon_days:
            raise ValidationFailed.for_field("end", f"at most {page.horizon_days} days after start")
        slots = selectors.page_slots(
            page,
            first_day=data["start"],
            last_day=data["end"],
            practitioner_ids=[data["practitioner_id"]] if data.get("practitioner_id") else None,
            location_id=data.get("location_id"),
        )
        return Response(
            {
                "timezone": str(practice_timezone(page.organization)),
                "slots": slot_rows(slots),
            }
        )


class PublicHoldView(PublicBookingView):
    bucket = HOLD_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_public_hold",
        summary="Hold a free slot for 10 minutes",
        description="Public. The slot must be one availability offers. Of visitors racing for one slot exactly one "
        "gets it (201); the others 409 BOOKING_SLOT_UNAVAILABLE. The hold's opaque holdId completes the booking "
        "before expiresAt. Body at most 256 KiB. Bucket: 60 burst, 1 per second per practice.",
        parameters=[TOKEN_PARAM],
        request=s.HoldCreateSerializer,
        responses={201: s.HoldSerializer},
        auth=[],
    )
    def post(self, request, token):
        page = self.load_page(request, token)
        data = self.parse_body(s.HoldCreateSerializer).validated_data
        treatment = None
        if data.get("treatment_id"):
            treatment = Treatment.objects.for_org(page.organization).filter(id=data["treatment_id"]).first()
            if treatment is None:
                raise ValidationFailed.for_field("treatmentId", "is not offered on this booking page")
        hold = _stored(
            lambda: services.hold_create(
                page=page,
                practitioner_id=data["practitioner_id"],
                starts_at=data["starts_at"],
                location_id=data.get("location_id"),
                treatment=treatment,
            )
        )
        return Response(s.HoldSerializer(hold).data, status=201)


class PublicCompleteView(PublicBookingView):
    bucket = COMPLETE_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_public_complete",
        summary="Complete a hold: the patient's details book the appointment",
        description="Public. Matches the practice's patient by e-mail or phone (or creates one), opens a journey on "
        "the treatment (or reuses the patient's open one), and books the appointment. Idempotent by the hold: "
        "completing again answers 200 with the same booking (and records nothing more). An expired hold is 409 "
        "BOOKING_HOLD_EXPIRED. marketingConsent=true (the patient ticked the page's consentText) records marketing "
        "consent granted for e-mail and/or SMS, the contact details given, with source booking_page and the "
        "wording as evidence; absent or false records none. The answer's uid manages the booking. Body at most "
        "256 KiB. Bucket: its own, 60 burst, 1 per second per practice.",
        parameters=[TOKEN_PARAM, OpenApiParameter("hold_id", OpenApiTypes.STR, OpenApiParameter.PATH)],
        request=s.CompleteSerializer,
        responses={200: s.BookingSerializer, 201: s.BookingSerializer},
        auth=[],
    )
    def post(self, request, token, hold_id):
        page = self.load_page(request, token)
        data = self.parse_body(s.CompleteSerializer).validated_data
        booking, created = _stored(lambda: services.hold_complete(page=page, key=hold_id, data=data))
        booking = selectors.booking_for_uid(booking.uid)
        return Response(s.BookingSerializer(booking).data, status=201 if created else 200)


# --- public: /booking/manage/{uid} ------------------------------------------------------------------------------------


class PublicManageBase(PublicBookingView):
    booking = None

    def load_booking(self, request, uid):
        PUBLIC_SCREEN.check(request, self)
        self.booking = selectors.booking_for_uid(uid)
        if self.booking is None:
            raise NotFound("No such booking.")
        self.page = self.booking.page
        if self.bucket is not None:
            self.bucket.check(request, self)
        return self.booking

    def answer(self):
        return Response(s.BookingSerializer(selectors.booking_for_uid(self.booking.uid)).data)


class PublicManageView(PublicManageBase):
    bucket = CONFIG_BUCKET
    content_negotiation_class = FirstRenderer  # a browser's Accept never makes this 406: it gets the page

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_public_manage_read",
        summary="A booking by its management uid",
        description="Public; the uid is the boundary. Shares the page-config bucket of the practice. A browser "
        "(Accept preferring text/html, as the confirmation page's link opens it) gets a page showing the booking "
        "and, while it may still be changed online, a link to its free times (GET /booking/manage/{uid}/page/"
        "times) and a cancel form with a confirm checkbox (POST /booking/manage/{uid}/page/cancel); past the change "
        "notice or cancelled, the page says so and offers no action.",
        parameters=[UID_PARAM],
        responses={
            (200, "application/json"): s.BookingSerializer,
            (200, "text/html"): OpenApiResponse(
                OpenApiTypes.STR, description="The booking as a page with its actions, for browsers."
            ),
        },
        auth=[],
    )
    def get(self, request, uid):
        booking = self.load_booking(request, uid)
        if wants_html(request):
            return pages.manage_page(request, booking=selectors.booking_for_uid(booking.uid))
        return self.answer()


class PublicCancelView(PublicManageBase):
    bucket = HOLD_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_public_manage_cancel",
        summary="Cancel a booking by its management uid",
        description="Public. Allowed until the page's change notice before the appointment (else 409 "
        "BOOKING_CHANGE_NOT_ALLOWED); cancelling again answers the cancelled booking. Shares the hold bucket.",
        parameters=[UID_PARAM],
        request=s.CancelSerializer,
        responses={200: s.BookingSerializer},
        auth=[],
    )
    def post(self, request, uid):
        booking = self.load_booking(request, uid)
        data = self.parse_body(s.CancelSerializer).validated_data
        _stored(lambda: services.booking_cancel(booking=booking, reason=data.get("reason", "")))
        return self.answer()


class PublicRescheduleView(PublicManageBase):
    bucket = HOLD_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_public_manage_reschedule",
        summary="Move a booking to another free slot of its page",
        description="Public. The new time must be a slot the page offers (same practitioner unless another of the "
        "page's is named), and the change within the page's change notice (409 BOOKING_CHANGE_NOT_ALLOWED "
        "otherwise). Shares the hold bucket.",
        parameters=[UID_PARAM],
        request=s.RescheduleSerializer,
        responses={200: s.BookingSerializer},
        auth=[],
    )
    def post(self, request, uid):
        booking = self.load_booking(request, uid)
        data = self.parse_body(s.RescheduleSerializer).validated_data
        _stored(
            lambda: services.booking_reschedule(
                booking=booking, starts_at=data["starts_at"], practitioner_id=data.get("practitioner_id")
            )
        )
        return self.answer()
