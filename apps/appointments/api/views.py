"""Appointments, calendar and scheduling routes: thin views that parse, call one selector or service, and render."""

from datetime import timedelta

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.appointments import selectors, services
from apps.appointments.api import serializers as s
from apps.core.errors import NotFound, ValidationFailed
from apps.core.pagination import offset_page
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.views import BaseApiView
from apps.journeys.public import Treatment
from apps.patients.public import Practitioner
from apps.tasks.public import practice_timezone

APPOINTMENTS = ["appointments"]
CALENDAR = ["calendar"]
SCHEDULING = ["scheduling"]


class AppointmentsView(BaseApiView):
    scope_area = "appointments"
    renderer_classes = [CamelCaseJSONRenderer]

    def appointment(self, id):
        appointment = selectors.appointment_get(organization=self.organization, appointment_id=id)
        if appointment is None:
            raise NotFound("No such appointment.")
        return appointment

    def change(self, id, body_class, service, *, whole_body: bool = False) -> Response:
        """A write on one appointment: parse the body, call the service (the validated body as `data`, or its keys
        as arguments), answer the appointment as stored."""
        appointment = self.appointment(id)
        data = dict(self.parse_body(body_class).validated_data)
        arguments = {"data": data} if whole_body else data
        changed = service(
            organization=self.organization, user=self.request.user, appointment_id=appointment.id, **arguments
        )
        return self.render(changed)

    def render(self, appointment, status: int = 200) -> Response:
        """The appointment as stored, with its related names (one read after the write)."""
        fresh = selectors.appointment_get(organization=self.organization, appointment_id=appointment.id)
        return Response(s.AppointmentSerializer(fresh).data, status=status)


class AppointmentListView(AppointmentsView):
    permission = {"GET": "appointment:read", "POST": "appointment:create"}
    error_statuses = ("409",)

    @extend_schema(
        tags=APPOINTMENTS,
        operation_id="appointments_list",
        parameters=[s.AppointmentListQuerySerializer],
        responses={200: s.AppointmentPageSerializer},
        summary="List appointments: filters by patient, practitioner, location, status and start; offset paging",
        description="Ordered by start time, then id. Cancelled appointments are included unless status filters them.",
    )
    def get(self, request):
        data = self.parse_query(s.AppointmentListQuerySerializer).validated_data
        rows, total = selectors.appointment_page(
            organization=self.organization,
            query=selectors.AppointmentQuery(
                patient_id=data.get("patient_id"),
                practitioner_id=data.get("practitioner_id"),
                location_id=data.get("location_id"),
                status=data.get("status"),
                starts_after=data.get("starts_after"),
                starts_before=data.get("starts_before"),
            ),
            limit=data["limit"],
            offset=data["offset"],
        )
        items = s.AppointmentSerializer(rows, many=True).data
        return offset_page(items, total, limit=data["limit"], offset=data["offset"])

    @extend_schema(
        tags=APPOINTMENTS,
        request=s.AppointmentCreateSerializer,
        responses={201: s.AppointmentSerializer},
        summary="Book an appointment (409 APPOINTMENT_CONFLICT when the practitioner is already booked)",
        description="patientId, practitionerId, startsAt and endsAt (with offsets; at most 12 hours long) are "
        "required. Ids must name records of the practice (400 otherwise; archived practitioners, locations and "
        "patients are refused). A practitioner cannot hold two overlapping appointments that keep time (booked, "
        "confirmed, arrived, completed): the clash answers 409 APPOINTMENT_CONFLICT with "
        "details.conflictingAppointmentId. A merged patient answers 409 PATIENT_MERGED. Without treatmentId, a "
        "journeyId gives its treatment.",
    )
    def post(self, request):
        body = self.parse_body(s.AppointmentCreateSerializer)
        appointment = services.appointment_create(
            organization=self.organization, user=request.user, data=body.validated_data
        )
        return self.render(appointment, status=201)


class AppointmentView(AppointmentsView):
    permission = {"GET": "appointment:read", "PATCH": "appointment:update"}
    error_statuses = ("409",)

    @extend_schema(
        tags=APPOINTMENTS,
        responses={200: s.AppointmentSerializer},
        summary="Read one appointment",
        description="Permission appointment:read. The appointment with its patient, practitioner, location and "
        "treatment names. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.AppointmentSerializer(self.appointment(id)).data)

    @extend_schema(
        tags=APPOINTMENTS,
        request=s.AppointmentUpdateSerializer,
        responses={200: s.AppointmentSerializer},
        summary="Update an open appointment's details (times move through reschedule)",
        description="Any subset of practitionerId, locationId, treatmentId, journeyId, appointmentType, notes. "
        "A completed, no-show or cancelled appointment answers 409 APPOINTMENT_CLOSED; another practitioner who is "
        "busy then answers 409 APPOINTMENT_CONFLICT.",
    )
    def patch(self, request, id):
        return self.change(id, s.AppointmentUpdateSerializer, services.appointment_update, whole_body=True)


class AppointmentRescheduleView(AppointmentsView):
    permission = "appointment:update"
    error_statuses = ("409",)

    @extend_schema(
        tags=APPOINTMENTS,
        request=s.AppointmentRescheduleSerializer,
        responses={200: s.AppointmentSerializer},
        summary="Reschedule: new start and end, optionally another practitioner or location",
        description="Emits appointment.rescheduled with the previous times. A confirmed appointment goes back to "
        "booked (the new time is not confirmed yet). 409 APPOINTMENT_CONFLICT on a clash; 409 APPOINTMENT_CLOSED "
        "once the patient arrived or the appointment is completed, a no-show or cancelled.",
    )
    def post(self, request, id):
        return self.change(id, s.AppointmentRescheduleSerializer, services.appointment_reschedule, whole_body=True)


class AppointmentStatusView(AppointmentsView):
    permission = "appointment:update"
    error_statuses = ("409",)

    @extend_schema(
        tags=APPOINTMENTS,
        request=s.AppointmentStatusSerializer,
        responses={200: s.AppointmentSerializer},
        summary="Move the appointment along the day: booked ⇄ confirmed → arrived → completed, or no_show",
        description="Allowed moves: booked → confirmed, arrived, no_show; confirmed → booked, arrived, no_show; "
        "arrived → completed, confirmed; no_show → booked (a mistake undone, when the time is still free). "
        "Sending the current status changes nothing. Others answer 409 APPOINTMENT_TRANSITION_NOT_ALLOWED with "
        "details.allowed.",
    )
    def post(self, request, id):
        return self.change(id, s.AppointmentStatusSerializer, services.appointment_set_status)


class AppointmentCancelView(AppointmentsView):
    permission = "appointment:update"
    error_statuses = ("409",)

    @extend_schema(
        tags=APPOINTMENTS,
        request=s.AppointmentCancelSerializer,
        responses={200: s.AppointmentSerializer},
        summary="Cancel an appointment (frees the practitioner's time; repeating is harmless)",
        description="Body {reason?}. A completed or no-show appointment answers 409 "
        "APPOINTMENT_TRANSITION_NOT_ALLOWED.",
    )
    def post(self, request, id):
        return self.change(id, s.AppointmentCancelSerializer, services.appointment_cancel)


class CalendarView(AppointmentsView):
    permission = "appointment:read"

    @extend_schema(
        tags=CALENDAR,
        operation_id="calendar_read",
        parameters=[s.CalendarQuerySerializer],
        responses={200: s.CalendarSerializer},
        summary="The diary: appointments overlapping a time range, by practitioner and location",
        description="Every appointment that overlaps [start, end), soonest first; cancelled ones only with "
        "includeCancelled=true. The practice's timezone is returned for display.",
    )
    def get(self, request):
        data = self.parse_query(s.CalendarQuerySerializer).validated_data
        rows = selectors.appointments_between(
            organization=self.organization,
            start=data["range_start"],
            end=data["range_end"],
            practitioner_ids=data.get("practitioner_ids"),
            location_ids=data.get("location_ids"),
            include_cancelled=data["include_cancelled"],
        )
        # Through CalendarSerializer so start and end are written like every other instant of the API.
        return Response(
            s.CalendarSerializer(
                {
                    "start": data["range_start"],
                    "end": data["range_end"],
                    "timezone": str(practice_timezone(self.organization)),
                    "items": rows,
                }
            ).data
        )


class AvailabilityView(AppointmentsView):
    permission = "appointment:read"

    @extend_schema(
        tags=SCHEDULING,
        operation_id="scheduling_availability",
        parameters=[s.AvailabilityQuerySerializer],
        responses={200: s.AvailabilitySerializer},
        summary="Free slots for a treatment's duration within practitioners' working hours",
        description="Slots start every stepMinutes inside each practitioner's working hours (practice local time), "
        "never in the past, and never overlap an appointment that holds time. Send exactly one of treatmentId or "
        "durationMinutes. Archived practitioners offer no slots.",
    )
    def get(self, request):
        data = self.parse_query(s.AvailabilityQuerySerializer).validated_data
        minutes = data.get("duration_minutes")
        if minutes is None:
            treatment = Treatment.objects.for_org(self.organization).filter(id=data["treatment_id"]).first()
            if treatment is None:
                raise ValidationFailed.for_field("treatmentId", "does not exist in this practice")
            minutes = treatment.duration_minutes
        slots = selectors.availability(
            organization=self.organization,
            first_day=data["first_day"],
            last_day=data["last_day"],
            duration=timedelta(minutes=minutes),
            step=timedelta(minutes=data["step_minutes"]),
            practitioner_ids=data.get("practitioner_ids"),
            location_id=data.get("location_id"),
            limit=data["limit"],
        )
        return Response(
            {
                "timezone": str(practice_timezone(self.organization)),
                "duration_minutes": minutes,
                "items": s.SlotSerializer(slots, many=True).data,
            }
        )


class WorkingHoursView(AppointmentsView):
    permission = {"GET": "appointment:read", "PUT": "settings:update"}

    def practitioner(self, id) -> Practitioner:
        return self.get_tenant_object(Practitioner, id)

    def render_hours(self, practitioner, rows) -> Response:
        return Response(
            {
                "practitioner_id": practitioner.id,
                "timezone": str(practice_timezone(self.organization)),
                "intervals": s.WorkingHoursRowSerializer(rows, many=True).data,
            }
        )

    @extend_schema(
        tags=SCHEDULING,
        responses={200: s.WorkingHoursSerializer},
        summary="A practitioner's regular week of working hours",
        description="Permission appointment:read. intervals of {weekday (0 = Monday), startTime, endTime, "
        "locationId?} in the practice's local time.",
    )
    def get(self, request, id):
        practitioner = self.practitioner(id)
        rows = selectors.working_hours_of(organization=self.organization, practitioner_id=practitioner.id)
        return self.render_hours(practitioner, rows)

    @extend_schema(
        tags=SCHEDULING,
        request=s.WorkingHoursWriteSerializer,
        responses={200: s.WorkingHoursSerializer},
        summary="Replace a practitioner's working week (settings:update)",
        description="intervals: up to 50 of {weekday 0 to 6 (Monday = 0), startTime, endTime, locationId?} in the "
        "practice's local time; intervals of one weekday may not overlap. An empty list clears the week.",
    )
    def put(self, request, id):
        practitioner = self.practitioner(id)
        body = self.parse_body(s.WorkingHoursWriteSerializer)
        rows = services.working_hours_replace(
            organization=self.organization, practitioner=practitioner, intervals=body.validated_data["intervals"]
        )
        return self.render_hours(practitioner, rows)


class SchedulingSettingsView(BaseApiView):
    scope_area = "settings"
    renderer_classes = [CamelCaseJSONRenderer]
    permission = {"GET": "settings:read", "PATCH": "settings:update"}

    def render_settings(self) -> Response:
        return Response({"timezone": str(practice_timezone(self.organization))})

    @extend_schema(
        tags=["settings"],
        responses={200: s.SchedulingSettingsSerializer},
        summary="The practice's timezone",
        description="Permission settings:read. {timezone}: the practice's IANA timezone (UTC until set).",
    )
    def get(self, request):
        return self.render_settings()

    @extend_schema(
        tags=["settings"],
        request=s.SchedulingSettingsSerializer,
        responses={200: s.SchedulingSettingsSerializer},
        summary="Set the practice's timezone (IANA name): today, the diary's days and working hours follow it",
        description="Permission settings:update. {timezone}, an IANA name (for example Europe/Rome); anything else "
        "answers 400. Today, due-today tasks, the diary's days and working hours follow it.",
    )
    def patch(self, request):
        body = self.parse_body(s.SchedulingSettingsSerializer)
        services.practice_timezone_set(organization=self.organization, name=body.validated_data["timezone"])
        return self.render_settings()
