"""The hosted booking page (tag booking): GET /booking/{token} and its form posts /booking/{token}/page/hold and
/booking/{token}/page/complete. The same selectors, services, abuse screen, buckets and 256 KiB cap as the JSON
routes; what a person did wrong (a taken slot, an expired hold, a missing e-mail) is shown on the page again, and any
other failure (413, 429, 503) is an error page for a browser (apps.core.browser_pages, registered in BookingConfig)."""

from datetime import date

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import FormParser

from apps.booking import pages, selectors, services
from apps.booking.api import serializers as s
from apps.booking.api.views import (
    AVAILABILITY_BUCKET,
    COMPLETE_BUCKET,
    HOLD_BUCKET,
    PUBLIC_TAGS,
    TOKEN_PARAM,
    FirstRenderer,
    PublicBookingView,
    _stored,
)
from apps.booking.errors import BookingNotFound, HoldExpired, SlotUnavailable
from apps.core.browser_pages import wants_html
from apps.core.schema import ApiErrorSerializer

NOT_FOUND = (
    "An unknown, rotated, archived or inactive token: an HTML page for browsers, the ApiError envelope otherwise."
)
NOT_FOUND_RESPONSES = {
    (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NOT_FOUND),
    (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NOT_FOUND),
}
UNREADABLE = {
    (400, "application/json"): OpenApiResponse(
        ApiErrorSerializer, description="A body that cannot be read as a form (the envelope)."
    ),
}
TAKEN = "Sorry, that time was just taken. Please choose another."
EXPIRED = "Your hold on that time ran out. Please choose a time again."
HOLD_FIELDS = ("practitionerId", "startsAt", "locationId", "treatmentId")
DETAIL_FIELDS = ("firstName", "lastName", "email", "phone", "notes")
SNAKE = {
    "practitionerId": "practitioner_id",
    "startsAt": "starts_at",
    "locationId": "location_id",
    "treatmentId": "treatment_id",
    "firstName": "first_name",
    "lastName": "last_name",
}


class BookingPageView(PublicBookingView):
    content_negotiation_class = FirstRenderer
    parser_classes = [FormParser]

    def open_page(self, request, token):
        """The page, or None when the token publishes none (answered by `not_found`)."""
        try:
            return self.load_page(request, token)
        except BookingNotFound:
            return None

    @staticmethod
    def not_found(request):
        if wants_html(request):
            return pages.not_found_page(request)
        raise BookingNotFound()

    def form(self, names) -> dict:
        """The posted form's fields of `names` (blank ones left out), keyed as the serializers name them."""
        data = self.request.data
        return {SNAKE.get(name, name): data.get(name, "").strip() for name in names if data.get(name, "").strip()}

    def day_of(self, page, starts_at):
        return starts_at.astimezone(selectors.practice_timezone(page.organization)).date()

    def show_day(self, request, page, token, day: date, *, treatment_id=None, message="", status=200):
        slots = selectors.page_slots(page, first_day=day, last_day=day)
        return pages.day_page(
            request,
            page=page,
            token=token,
            day=day,
            slots=slots,
            treatment_id=treatment_id,
            message=message,
            status=status,
        )


def _day(text: str | None, page) -> date | None:
    first_day, last_day = selectors.bookable_days(page)
    try:
        day = date.fromisoformat(text) if text else None
    except ValueError:
        return None
    return day if day is not None and first_day <= day <= last_day else None


def _treatment(page, value):
    if not value:
        return None
    offered = {str(t.id): t for t in selectors.page_offer(page).treatments}
    return offered.get(str(value))


class BookingPageDayView(BookingPageView):
    http_method_names = ["get", "head"]
    bucket = AVAILABILITY_BUCKET

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_page",
        summary="The hosted booking page: the bookable days as links and one day's free slots as buttons",
        description="Public; the token is the boundary. A server-rendered page (no JavaScript). ?date=YYYY-MM-DD "
        "picks the local day (default: the first day with a free slot; a day outside the horizon shows the first "
        "day); ?treatment=<id> one of the page's treatments. The slots are those of GET /booking/{token}/"
        "availability; each is a form posting to /booking/{token}/page/hold. Bucket: the availability one.",
        parameters=[
            TOKEN_PARAM,
            inline_serializer(
                "BookingPageQuery",
                {
                    "date": serializers.DateField(required=False, help_text="Local day (practice timezone)."),
                    "treatment": serializers.UUIDField(required=False),
                },
            ),
        ],
        responses={(200, "text/html"): OpenApiTypes.STR, **NOT_FOUND_RESPONSES},
        auth=[],
    )
    def get(self, request, token):
        page = self.open_page(request, token)
        if page is None:
            return self.not_found(request)
        treatment = _treatment(page, request.query_params.get("treatment"))
        day = _day(request.query_params.get("date"), page)
        if day is None:
            first_day, last_day = selectors.bookable_days(page)
            upcoming = selectors.page_slots(page, first_day=first_day, last_day=last_day, limit=1)
            day = self.day_of(page, upcoming[0].starts_at) if upcoming else first_day
        return self.show_day(request, page, token, day, treatment_id=treatment.id if treatment else None)


class BookingPageHoldView(BookingPageView):
    http_method_names = ["post"]
    bucket = HOLD_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_page_hold",
        summary="The booking page's slot button: hold the slot, then show the details form",
        description="Public. A form post (application/x-www-form-urlencoded: startsAt, practitionerId, locationId, "
        "treatmentId) holding the slot through the same service as POST /booking/{token}/holds (10 minutes). "
        "Answers the details form (200), or the day again with a message: a taken slot 409, a malformed post 400. "
        "Body at most 256 KiB. Bucket: the hold one.",
        parameters=[TOKEN_PARAM],
        request={
            "application/x-www-form-urlencoded": inline_serializer(
                "BookingPageHoldForm",
                {
                    "startsAt": serializers.DateTimeField(),
                    "practitionerId": serializers.UUIDField(),
                    "locationId": serializers.UUIDField(required=False),
                    "treatmentId": serializers.UUIDField(required=False),
                },
            )
        },
        responses={
            (200, "text/html"): OpenApiTypes.STR,
            **UNREADABLE,
            (400, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The day again: the post was not valid."),
            (409, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The day again: the slot was taken."),
            **NOT_FOUND_RESPONSES,
        },
        auth=[],
    )
    def post(self, request, token):
        page = self.open_page(request, token)
        if page is None:
            return self.not_found(request)
        serializer = s.HoldCreateSerializer(data=self.form(HOLD_FIELDS), context=self.serializer_context())
        if not serializer.is_valid():
            first_day, _ = selectors.bookable_days(page)
            message = "That time could not be read. Please choose a time again."
            return self.show_day(request, page, token, first_day, message=message, status=400)
        data = serializer.validated_data
        treatment = _treatment(page, data.get("treatment_id"))
        day = self.day_of(page, data["starts_at"])
        try:
            hold = _stored(
                lambda: services.hold_create(
                    page=page,
                    practitioner_id=data["practitioner_id"],
                    starts_at=data["starts_at"],
                    location_id=data.get("location_id"),
                    treatment=treatment,
                )
            )
        except SlotUnavailable:
            treatment_id = treatment.id if treatment else None
            return self.show_day(request, page, token, day, treatment_id=treatment_id, message=TAKEN, status=409)
        return pages.details_page(request, page=page, token=token, hold=hold)


class BookingPageCompleteView(BookingPageView):
    http_method_names = ["post"]
    bucket = COMPLETE_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_page_complete",
        summary="The booking page's details form: book the held slot, then show the confirmation",
        description="Public. A form post (holdId, firstName, lastName, email, phone, notes: an e-mail or a phone "
        "is required) completing the hold through the same service as POST /booking/{token}/holds/{holdId}/"
        "complete (idempotent by the hold). Answers the confirmation page with the appointment's time and its "
        "management link (201; 200 when completed again), the details form again with each problem next to its "
        "field (400), or the day again with a message when the hold expired or its slot was taken (409). Body at "
        "most 256 KiB. Bucket: the complete one.",
        parameters=[TOKEN_PARAM],
        request={
            "application/x-www-form-urlencoded": inline_serializer(
                "BookingPageCompleteForm",
                {
                    "holdId": serializers.CharField(),
                    "firstName": serializers.CharField(),
                    "lastName": serializers.CharField(required=False),
                    "email": serializers.EmailField(required=False),
                    "phone": serializers.CharField(required=False),
                    "notes": serializers.CharField(required=False),
                },
            )
        },
        responses={
            (201, "text/html"): OpenApiTypes.STR,
            (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="Completed again: the same booking."),
            **UNREADABLE,
            (400, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The details form with its problems."),
            (409, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The day again: hold expired or taken."),
            **NOT_FOUND_RESPONSES,
        },
        auth=[],
    )
    def post(self, request, token):
        page = self.open_page(request, token)
        if page is None:
            return self.not_found(request)
        hold = selectors.hold_for_key(page, request.data.get("holdId", ""))
        if hold is None:
            first_day, _ = selectors.bookable_days(page)
            return self.show_day(request, page, token, first_day, message=EXPIRED, status=409)
        values = {name: request.data.get(name, "") for name in DETAIL_FIELDS}
        serializer = s.CompleteSerializer(data=self.form(DETAIL_FIELDS), context=self.serializer_context())
        if not serializer.is_valid():
            errors = {_camel(name): " ".join(str(e) for e in problems) for name, problems in serializer.errors.items()}
            return pages.details_page(
                request, page=page, token=token, hold=hold, values=values, errors=errors, status=400
            )
        day = self.day_of(page, hold.starts_at)
        try:
            booking, created = _stored(
                lambda: services.hold_complete(page=page, key=hold.key, data=serializer.validated_data)
            )
        except HoldExpired:
            return self.show_day(request, page, token, day, message=EXPIRED, status=409)
        except SlotUnavailable:
            return self.show_day(request, page, token, day, message=TAKEN, status=409)
        booking = selectors.booking_for_uid(booking.uid)
        return pages.confirmed_page(request, page=page, booking=booking, status=201 if created else 200)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
