"""Shared helpers of the appointments tests: JSON calls, rows made directly (so a test's setup does not depend on
the routes under test), and the snapshot every refused request must leave untouched."""

import uuid
from datetime import UTC, datetime, timedelta

from django.test import Client

from apps.accounts.models import Organization
from apps.appointments.models import Appointment, WorkingHours
from apps.events.models import Event
from apps.patients.models import Activity
from tests.factories import PatientFactory, PractitionerFactory
from tests.helpers import assert_error

JSON = "application/json"
APPOINTMENTS = "/appointments"
CALENDAR = "/calendar"
AVAILABILITY = "/scheduling/availability"
SETTINGS = "/settings/scheduling"

# A Tuesday far enough ahead that nothing is in the past unless a test moves the clock there.
START = datetime(2031, 3, 4, 9, 0, tzinfo=UTC)
DAY = START.date().isoformat()


def at(hours: float) -> datetime:
    return START + timedelta(hours=hours)


def iso(hours: float) -> str:
    return at(hours).isoformat()


def wire(value) -> str:
    """How the API writes an instant (REST_FRAMEWORK DATETIME_FORMAT): UTC with microseconds; hours after START
    or an aware datetime."""
    instant = value if isinstance(value, datetime) else at(value)
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def post_json(client: Client, path: str, data=None):
    return client.post(path, {} if data is None else data, content_type=JSON)


def patch_json(client: Client, path: str, data):
    return client.patch(path, data, content_type=JSON)


def put_json(client: Client, path: str, data):
    return client.put(path, data, content_type=JSON)


def _id(record) -> str:
    if isinstance(record, (str, uuid.UUID)):
        return str(record)
    return str(record["id"] if isinstance(record, dict) else record.id)


def url(appointment, action: str = "") -> str:
    return f"{APPOINTMENTS}/{_id(appointment)}" + (f"/{action}" if action else "")


def hours_url(practitioner) -> str:
    return f"/scheduling/practitioners/{_id(practitioner)}/working-hours"


def booking(patient, practitioner, start: float = 0, end: float = 0.5, **extra) -> dict:
    """A POST /appointments body; `start` and `end` are hours after START."""
    body = {"patientId": _id(patient), "practitionerId": _id(practitioner), "startsAt": iso(start), "endsAt": iso(end)}
    return body | extra


def book(client: Client, patient, practitioner, start: float = 0, end: float = 0.5, **extra):
    return post_json(client, APPOINTMENTS, booking(patient, practitioner, start, end, **extra))


def make_appointment(
    organization, *, patient=None, practitioner=None, start: float = 0, end: float = 0.5, **fields
) -> Appointment:
    """An appointment row written directly (no event, no timeline line)."""
    return Appointment.objects.create(
        organization=organization,
        patient=patient or PatientFactory(organization=organization),
        practitioner=practitioner or PractitionerFactory(organization=organization),
        starts_at=at(start),
        ends_at=at(end),
        **fields,
    )


def hours(weekday: int, start: str, end: str, location=None) -> dict:
    interval = {"weekday": weekday, "startTime": start, "endTime": end}
    if location is not None:
        interval["locationId"] = _id(location)
    return interval


def set_hours(client: Client, practitioner, *intervals: dict):
    return put_json(client, hours_url(practitioner), {"intervals": list(intervals)})


def set_timezone(client: Client, name: str):
    response = patch_json(client, SETTINGS, {"timezone": name})
    assert response.status_code == 200, response.content
    return response


def create_treatment(client: Client, **body) -> dict:
    response = post_json(client, "/treatments", {"name": "Implant", **body})
    assert response.status_code == 201, response.content
    return response.json()


def create_journey(client: Client, patient, treatment=None) -> dict:
    body = {"patientId": _id(patient)} | ({"treatmentId": _id(treatment)} if treatment else {})
    response = post_json(client, "/journeys", body)
    assert response.status_code == 201, response.content
    return response.json()


def snapshot(organization) -> dict:
    """Everything a refused appointments or scheduling request must leave untouched."""
    organization = Organization.objects.get(pk=getattr(organization, "pk", organization))
    return {
        "appointments": sorted(
            Appointment.objects.for_org(organization).values_list(
                "id",
                "patient_id",
                "practitioner_id",
                "location_id",
                "treatment_id",
                "journey_id",
                "appointment_type",
                "starts_at",
                "ends_at",
                "status",
                "status_changed_at",
                "cancel_reason",
                "notes",
                "updated_at",
            )
        ),
        "hours": sorted(
            WorkingHours.objects.for_org(organization).values_list(
                "id", "practitioner_id", "weekday", "start_time", "end_time", "location_id"
            )
        ),
        "events": sorted(Event.objects.for_org(organization).values_list("id", flat=True)),
        "timeline": sorted(Activity.objects.for_org(organization).values_list("id", flat=True)),
        "timezone": organization.timezone,
    }


def appointment_events(organization, appointment=None, type: str | None = None) -> list[Event]:
    events = Event.objects.for_org(organization).filter(subject_type="appointment")
    if appointment is not None:
        events = events.filter(subject_id=_id(appointment))
    if type:
        events = events.filter(type=type)
    return list(events.order_by("created_at", "id"))


def slot_starts(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [slot["startsAt"] for slot in response.json()["items"]]


def assert_refused(organization, send, status: int = 400, code: str = "VALIDATION_ERROR", field: str | None = None):
    """`send()` makes one request that must be refused with this error envelope (naming `field` among the invalid
    fields) and leave the practice exactly as it was. Returns the error body."""
    before = snapshot(organization)
    body = assert_error(send(), status, code)
    if field is not None:
        assert field in body["details"]["fields"], body
    assert snapshot(organization) == before
    return body
