"""The hosted booking page (tag booking): GET /booking/{token} and its form posts /booking/{token}/page/hold and
/booking/{token}/page/complete; and the booking's management page's actions: GET /booking/manage/{uid}/page/times
(the free times to move to) and the form posts /booking/manage/{uid}/page/reschedule and …/page/cancel. The same
selectors, services, abuse screen, buckets and 256 KiB cap as the JSON routes; what a person did wrong or met (a taken
slot, an expired hold, a missing e-mail, changes closed) is shown on a page again, and any other failure (413, 429,
503) is an error page for a browser (apps.core.browser_pages, registered in BookingConfig)."""

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
    UID_PARAM,
    FirstRenderer,
    PublicBookingView,
    PublicManageBase,
    _stored,
)
from apps.booking.errors import BookingNotFound, ChangeNotAllowed, HoldExpired, SlotUnavailable
from apps.core.browser_pages import wants_html
from apps.core.errors import NotFound
from apps.core.schema import ApiErrorSerializer

NOT_FOUND = (
    "An unknown, rotated, archived or inactive token: an HTML page for browsers, the ApiError envelope otherwise."
)
NOT_FOUND_RESPONSES = {
    (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NOT_FOUND),
    (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NOT_FOUND),
}
NO_BOOKING = "An unknown management uid: an HTML page for browsers, the ApiError envelope otherwise."
NO_BOOKING_RESPONSES = {
    (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NO_BOOKING),
    (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NO_BOOKING),
}
CLOSED = (
    "The management page with the reason (409): cancelled, or past the page's change notice, or no longer booked "
    "or confirmed (what the JSON routes refuse with BOOKING_CHANGE_NOT_ALLOWED)."
)
UNREADABLE = {
    (400, "application/json"): OpenApiResponse(
        ApiErrorSerializer, description="A body that cannot be read as a form (the envelope)."
    ),
}
TAKEN = "Sorry, that time was just taken. Please choose another."
EXPIRED = "Your hold on that time ran out. Please choose a time again."
UNREADABLE_TIME = "That time could not be read. Please choose a time again."
SAME_TIME = "Your appointment is already at that time."
CONFIRM = "Tick the box to confirm that you want to cancel this appointment."
TICKED = ("yes", "on", "true", "1")  # a checkbox's value when ticked (left out of the post when not)
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


class FormPage:
    """What the page routes share: answers are made by the view (FirstRenderer), bodies are forms."""

    content_negotiation_class = FirstRenderer
    parser_classes = [FormParser]

    def form(self, names) -> dict:
        """The posted form's fields of `names` (blank ones left out), keyed as the serializers name them."""
        data = self.request.data
        return {SNAKE.get(name, name): data.get(name, "").strip() for name in names if data.get(name, "").strip()}

    def ticked(self, name: str) -> bool:
        return self.request.data.get(name, "").strip().lower() in TICKED

    @staticmethod
    def day_of(page, starts_at) -> date:
        """The practice's local day of an instant."""
        return starts_at.astimezone(selectors.practice_timezone(page.organization)).date()


class BookingPageView(FormPage, PublicBookingView):
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
            return self.show_day(request, page, token, first_day, message=UNREADABLE_TIME, status=400)
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
        "is required; marketingConsent=yes when the unticked-by-default consent checkbox showing the page's "
        "consentText was ticked) completing the hold through the same service as POST /booking/{token}/holds/"
        "{holdId}/complete (idempotent by the hold; a ticked checkbox records marketing consent for the channels "
        "given, with the wording as evidence). Answers the confirmation page with the appointment's time and its "
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
                    "marketingConsent": serializers.CharField(
                        required=False, help_text="yes when the consent checkbox was ticked (left out when not)."
                    ),
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
        consent = self.ticked("marketingConsent")
        values = {name: request.data.get(name, "") for name in DETAIL_FIELDS} | {"marketingConsent": consent}
        data = self.form(DETAIL_FIELDS) | {"marketing_consent": consent}
        serializer = s.CompleteSerializer(data=data, context=self.serializer_context())
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


# --- the management page's actions: /booking/manage/{uid}/page/… --------------------------------------------------


class ManagePageView(FormPage, PublicManageBase):
    def open_booking(self, request, uid):
        """The booking (its page bound to its practice), or None when the uid names none (see `not_found`)."""
        try:
            booking = self.load_booking(request, uid)
        except NotFound:
            return None
        booking.page.organization = booking.organization
        return booking

    @staticmethod
    def not_found(request):
        if wants_html(request):
            return pages.not_found_page(request)
        raise NotFound("No such booking.")

    @staticmethod
    def closed(request, booking):
        """What the JSON routes refuse with 409 BOOKING_CHANGE_NOT_ALLOWED, as the management page saying why."""
        return pages.manage_page(request, booking=booking, alert=pages.closed_message(booking), status=409)

    @staticmethod
    def fresh(booking):
        return selectors.booking_for_uid(booking.uid)

    def show_times(self, request, booking, day: date, *, practitioner_id=None, message="", status=200):
        slots = selectors.page_slots(
            booking.page,
            first_day=day,
            last_day=day,
            practitioner_ids=[practitioner_id] if practitioner_id else None,
        )
        return pages.times_page(
            request,
            booking=booking,
            day=day,
            slots=slots,
            practitioner_id=practitioner_id,
            message=message,
            status=status,
        )


def _practitioner_choice(booking, value):
    """The practitioner whose times to list: ?practitioner=<id> of the page's offer, `any` (None: all of them), or
    by default the booking's own practitioner while the page still offers them."""
    offered = {str(p.id): p.id for p in selectors.page_offer(booking.page).practitioners}
    if value == "any":
        return None
    if value and value in offered:
        return offered[value]
    current = booking.appointment.practitioner_id
    return current if str(current) in offered else None


class ManageTimesView(ManagePageView):
    http_method_names = ["get", "head"]
    bucket = AVAILABILITY_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_manage_page_times",
        summary="The management page's free times: the days as links and one day's slots to move the booking to",
        description="Public; the uid is the boundary. A server-rendered page (no JavaScript) for a booking that may "
        "still be changed online: the booking's page's bookable days as links and ?date=YYYY-MM-DD's free slots "
        "(default: the first day with one; a day outside the horizon shows that default), those of GET /booking/"
        "{token}/availability, each a form posting to /booking/manage/{uid}/page/reschedule. ?practitioner=<id> "
        "lists one of the page's practitioners, any lists them all; by default the booking's own. A cancelled "
        "booking or one past the page's change notice gets the management page saying so (409). Bucket: the "
        "availability one.",
        parameters=[
            UID_PARAM,
            inline_serializer(
                "BookingManageTimesQuery",
                {
                    "date": serializers.DateField(required=False, help_text="Local day (practice timezone)."),
                    "practitioner": serializers.CharField(
                        required=False, help_text="A practitioner id of the booking's page, or any."
                    ),
                },
            ),
        ],
        responses={
            (200, "text/html"): OpenApiTypes.STR,
            (409, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=CLOSED),
            **NO_BOOKING_RESPONSES,
        },
        auth=[],
    )
    def get(self, request, uid):
        booking = self.open_booking(request, uid)
        if booking is None:
            return self.not_found(request)
        if selectors.change_refusal(booking) is not None:
            return self.closed(request, booking)
        page = booking.page
        practitioner_id = _practitioner_choice(booking, request.query_params.get("practitioner"))
        day = _day(request.query_params.get("date"), page)
        if day is None:
            first_day, last_day = selectors.bookable_days(page)
            chosen = [practitioner_id] if practitioner_id else None
            upcoming = selectors.page_slots(
                page, first_day=first_day, last_day=last_day, practitioner_ids=chosen, limit=1
            )
            day = self.day_of(page, upcoming[0].starts_at) if upcoming else first_day
        return self.show_times(request, booking, day, practitioner_id=practitioner_id)


class ManageRescheduleView(ManagePageView):
    http_method_names = ["post"]
    bucket = HOLD_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_manage_page_reschedule",
        summary="The free-times page's slot button: move the booking to that time",
        description="Public. A form post (application/x-www-form-urlencoded: startsAt, practitionerId) moving the "
        "booking through the same service and rules as POST /booking/manage/{uid}/reschedule: a slot the booking's "
        "page offers, while the booking is booked or confirmed and before the page's change notice. Answers the "
        "management page saying the appointment was moved (200); the free times again with a message when the "
        "slot was taken meanwhile (or is not one the page offers, 409) or the post cannot be read (400); the "
        "management page with the reason when changes are closed or the booking is cancelled, or when it is "
        "already at that time (409). Body at most 256 KiB. Bucket: the hold one.",
        parameters=[UID_PARAM],
        request={
            "application/x-www-form-urlencoded": inline_serializer(
                "BookingManageRescheduleForm",
                {"startsAt": serializers.DateTimeField(), "practitionerId": serializers.UUIDField(required=False)},
            )
        },
        responses={
            (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The management page: moved."),
            **UNREADABLE,
            (400, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The free times: post not valid."),
            (409, "text/html"): OpenApiResponse(
                OpenApiTypes.STR, description=f"The free times again: the slot was taken. Or: {CLOSED}"
            ),
            **NO_BOOKING_RESPONSES,
        },
        auth=[],
    )
    def post(self, request, uid):
        booking = self.open_booking(request, uid)
        if booking is None:
            return self.not_found(request)
        if selectors.change_refusal(booking) is not None:
            return self.closed(request, booking)
        fields = ("startsAt", "practitionerId")
        serializer = s.RescheduleSerializer(data=self.form(fields), context=self.serializer_context())
        if not serializer.is_valid():
            first_day, _ = selectors.bookable_days(booking.page)
            return self.show_times(request, booking, first_day, message=UNREADABLE_TIME, status=400)
        data = serializer.validated_data
        appointment = booking.appointment
        practitioner_id = data.get("practitioner_id") or appointment.practitioner_id
        if data["starts_at"] == appointment.starts_at and practitioner_id == appointment.practitioner_id:
            return pages.manage_page(request, booking=booking, alert=SAME_TIME, status=409)
        try:
            _stored(
                lambda: services.booking_reschedule(
                    booking=booking, starts_at=data["starts_at"], practitioner_id=practitioner_id
                )
            )
        except SlotUnavailable:
            day = self.day_of(booking.page, data["starts_at"])
            shown = _practitioner_choice(booking, str(practitioner_id))
            return self.show_times(request, booking, day, practitioner_id=shown, message=TAKEN, status=409)
        except ChangeNotAllowed:
            return self.closed(request, self.fresh(booking))
        moved = self.fresh(booking)
        return pages.manage_page(request, booking=moved, message=pages.moved_message(moved))


class ManageCancelView(ManagePageView):
    http_method_names = ["post"]
    bucket = HOLD_BUCKET
    error_statuses = ("409",)

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="booking_manage_page_cancel",
        summary="The management page's cancel form: cancel the booking once confirmed",
        description="Public. A form post (application/x-www-form-urlencoded: confirm=yes, the ticked confirm "
        "checkbox; reason, optional) cancelling through the same service and rules as POST /booking/manage/{uid}/"
        "cancel. Answers the management page saying the appointment is cancelled (200; also when it already was), "
        "the management page asking to tick the box or with a too long reason (400), or the management page with "
        "the reason when changes are closed (409). Body at most 256 KiB. Bucket: the hold one.",
        parameters=[UID_PARAM],
        request={
            "application/x-www-form-urlencoded": inline_serializer(
                "BookingManageCancelForm",
                {
                    "confirm": serializers.CharField(help_text="yes: the confirm checkbox was ticked."),
                    "reason": serializers.CharField(required=False, max_length=500),
                },
            )
        },
        responses={
            (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The management page: cancelled."),
            **UNREADABLE,
            (400, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="The management page: not confirmed."),
            (409, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=CLOSED),
            **NO_BOOKING_RESPONSES,
        },
        auth=[],
    )
    def post(self, request, uid):
        booking = self.open_booking(request, uid)
        if booking is None:
            return self.not_found(request)
        if booking.appointment.status == "cancelled":  # cancelling again answers the cancelled booking
            return pages.manage_page(request, booking=booking)
        if selectors.change_refusal(booking) is not None:
            return self.closed(request, booking)
        serializer = s.CancelSerializer(data=self.form(("reason",)), context=self.serializer_context())
        errors = {} if self.ticked("confirm") else {"confirm": CONFIRM}
        if not serializer.is_valid():
            errors["reason"] = " ".join(str(e) for e in serializer.errors.get("reason", ["could not be read"]))
        if errors:
            return pages.manage_page(request, booking=booking, errors=errors, status=400)
        reason = serializer.validated_data.get("reason", "")
        try:
            _stored(lambda: services.booking_cancel(booking=booking, reason=reason))
        except ChangeNotAllowed:
            return self.closed(request, self.fresh(booking))
        return pages.manage_page(request, booking=self.fresh(booking), message="Your appointment has been cancelled.")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
