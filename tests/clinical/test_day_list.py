"""GET /day-list (the day per practitioner and chair), moving a patient along the day, and an appointment's chair."""

from datetime import UTC, date, datetime, timedelta

import pytest
from django.utils import timezone

from apps.accounts.models import Organization
from apps.appointments.public import Appointment
from apps.clinical.api.serializers import DayAppointmentSerializer, DayListSerializer
from apps.clinical.models import AppointmentVisit, Chair, PractitionerLink
from apps.core.naming import to_camel
from tests.clinical.conftest import make_appointment, post_json
from tests.factories import LocationFactory, PatientFactory, PractitionerFactory
from tests.helpers import assert_error

DAY = date(2026, 3, 10)


def _at(hour, minute=0, day=DAY):
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


@pytest.fixture
def chairs(org, location):
    return [
        Chair.objects.create(organization=org, location=location, name="Surgery 2", position=2),
        Chair.objects.create(organization=org, location=location, name="Surgery 1", position=1),
    ]


def test_the_day_per_practitioner_and_chair(owner, dentist, org, location, chairs, practitioner, patient):
    other = PractitionerFactory(organization=org, name="Dr Abate")
    PractitionerLink.objects.create(organization=org, practitioner=practitioner, user=dentist.user)
    in_2 = make_appointment(org, practitioner, patient, _at(9), location=location)
    in_1 = make_appointment(org, practitioner, patient, _at(10), location=location, appointment_type="hygiene")
    no_chair = make_appointment(org, practitioner, patient, _at(8))
    abate = make_appointment(org, other, patient, _at(11))
    make_appointment(org, other, patient, _at(12), status="cancelled")
    make_appointment(org, other, patient, _at(9, day=DAY + timedelta(days=1)))  # another day
    AppointmentVisit.objects.create(organization=org, appointment=in_2, chair=chairs[0])
    AppointmentVisit.objects.create(
        organization=org, appointment=in_1, chair=chairs[1], arrived_at=_at(9, 50), seated_at=_at(10, 5)
    )

    response = dentist.session_client().get(f"/day-list?date={DAY.isoformat()}")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["date"], body["timezone"], body["total"]) == ("2026-03-10", "UTC", 4)
    assert [g["practitioner"]["name"] for g in body["practitioners"]] == ["Dr Abate", "Dr Rossi"]
    rossi = body["practitioners"][1]
    assert rossi["practitioner"]["member"] == {"id": str(dentist.user.id), "name": dentist.user.name}
    assert body["practitioners"][0]["practitioner"]["member"] is None
    assert [(c["chair"] or {}).get("name") for c in rossi["chairs"]] == ["Surgery 1", "Surgery 2", None]
    assert [[a["id"] for a in c["appointments"]] for c in rossi["chairs"]] == [
        [str(in_1.id)],
        [str(in_2.id)],
        [str(no_chair.id)],
    ]
    seated = rossi["chairs"][0]["appointments"][0]
    assert seated["patient"] == {"id": str(patient.id), "firstName": "Anna", "lastName": "Bianchi"}
    assert (seated["appointmentType"], seated["status"], seated["waitingMinutes"]) == ("hygiene", "booked", 15)
    assert seated["location"] == {"id": str(location.id), "name": "Centre"}
    assert seated["arrivedAt"] == "2026-03-10T09:50:00.000000Z"
    assert (seated["startsAt"], seated["endsAt"]) == ("2026-03-10T10:00:00.000000Z", "2026-03-10T10:30:00.000000Z")
    assert rossi["chairs"][1]["appointments"][0]["waitingMinutes"] is None
    assert body["practitioners"][0]["chairs"][0]["appointments"][0]["id"] == str(abate.id)
    assert "notes" not in seated
    # The documented shape (DayListSerializer) is what the hand-built renderer writes.
    assert set(seated) == {to_camel(name) for name in DayAppointmentSerializer().fields}
    assert set(body) == {to_camel(name) for name in DayListSerializer().fields}
    assert set(rossi) == {"practitioner", "chairs"} and set(rossi["chairs"][0]) == {"chair", "appointments"}

    narrowed = dentist.session_client().get(f"/day-list?date={DAY}&practitionerId={other.id}").json()
    assert [g["practitioner"]["id"] for g in narrowed["practitioners"]] == [str(other.id)]
    by_location = dentist.session_client().get(f"/day-list?date={DAY}&locationId={location.id}").json()
    assert by_location["total"] == 2


def test_the_day_is_the_practices_local_day(owner, org, practitioner, patient):
    Organization.objects.filter(pk=org.pk).update(timezone="America/New_York")
    late_evening = make_appointment(
        org, practitioner, patient, _at(3, day=DAY + timedelta(days=1))
    )  # 22:00 on DAY there
    make_appointment(org, practitioner, patient, _at(3))  # 22:00 the day before there

    body = owner.session_client().get(f"/day-list?date={DAY}").json()

    assert body["timezone"] == "America/New_York"
    assert [a["id"] for a in body["practitioners"][0]["chairs"][0]["appointments"]] == [str(late_evening.id)]


def test_today_by_default(owner, org, practitioner, patient):
    now = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    today = make_appointment(org, practitioner, patient, now)
    body = owner.session_client().get("/day-list").json()
    assert body["date"] == now.date().isoformat()
    assert body["practitioners"][0]["chairs"][0]["appointments"][0]["id"] == str(today.id)


def test_the_whole_day_is_read_in_a_bounded_number_of_queries(owner, org, location, django_assert_max_num_queries):
    chairs = [Chair.objects.create(organization=org, location=location, name=f"S{i}") for i in range(4)]
    for _ in range(6):
        practitioner = PractitionerFactory(organization=org)
        for slot in range(8):
            appointment = make_appointment(org, practitioner, PatientFactory(organization=org), _at(8 + slot))
            AppointmentVisit.objects.create(organization=org, appointment=appointment, chair=chairs[slot % 4])
    client = owner.session_client()
    client.get(f"/day-list?date={DAY}")  # warm the session and membership caches like any later request

    with django_assert_max_num_queries(6) as captured:
        response = client.get(f"/day-list?date={DAY}")

    assert response.json()["total"] == 48
    appointment_reads = [q for q in captured.captured_queries if "appointments_appointment" in q["sql"]]
    assert len(appointment_reads) == 1


def test_bad_input_and_other_practices(owner, outsider):
    client = owner.session_client()
    assert_error(client.get("/day-list?date=2026-13-01"), 400, "VALIDATION_ERROR")
    assert_error(client.get("/day-list?practitionerId=nope"), 400, "VALIDATION_ERROR")
    assert_error(client.get("/day-list?shape=wide"), 400, "VALIDATION_ERROR")
    theirs = PractitionerFactory(organization=outsider.organization)
    body = assert_error(client.get(f"/day-list?practitionerId={theirs.id}"), 400, "VALIDATION_ERROR")
    assert "practitionerId" in body["details"]["fields"]
    their_location = LocationFactory(organization=outsider.organization)
    assert_error(client.get(f"/day-list?locationId={their_location.id}"), 400, "VALIDATION_ERROR")


def test_an_other_practices_appointments_never_show(owner, outsider, practitioner, patient, org):
    theirs = PractitionerFactory(organization=outsider.organization)
    make_appointment(outsider.organization, theirs, PatientFactory(organization=outsider.organization), _at(9))
    make_appointment(org, practitioner, patient, _at(9))
    body = owner.session_client().get(f"/day-list?date={DAY}").json()
    assert [g["practitioner"]["id"] for g in body["practitioners"]] == [str(practitioner.id)]


def test_roles_without_pms_diary(member_factory, org):
    for role in ("telesales", "analyst"):
        assert_error(
            member_factory(role=role, organization=org).session_client().get("/day-list"), 403, "PERMISSION_DENIED"
        )


# --- moving along the day --------------------------------------------------------------------------------------------


def _progress(client, appointment, step, **extra):
    return post_json(client, f"/clinical/appointments/{appointment.id}/progress", {"step": step, **extra})


def test_arrive_seat_complete(front_desk, dentist, org, location, chairs, practitioner, patient):
    appointment = make_appointment(org, practitioner, patient, timezone.now() - timedelta(minutes=5), location=location)

    arrived = _progress(front_desk.session_client(), appointment, "arrived")
    assert arrived.status_code == 200, arrived.content
    assert arrived.json()["status"] == "arrived"
    assert arrived.json()["arrivedAt"] is not None
    first_arrival = arrived.json()["arrivedAt"]

    seated = _progress(dentist.session_client(), appointment, "seated", chairId=str(chairs[1].id))
    assert seated.status_code == 200, seated.content
    assert seated.json()["chair"] == {"id": str(chairs[1].id), "name": "Surgery 1"}
    assert seated.json()["arrivedAt"] == first_arrival

    done = _progress(dentist.session_client(), appointment, "completed")
    assert done.status_code == 200, done.content
    assert done.json()["status"] == "completed"
    appointment.refresh_from_db()
    assert appointment.status == "completed"
    visit = AppointmentVisit.objects.for_org(org).get(appointment=appointment)
    assert visit.arrived_at <= visit.seated_at <= visit.completed_at

    again = _progress(dentist.session_client(), appointment, "seated")
    assert_error(again, 409, "APPOINTMENT_TRANSITION_NOT_ALLOWED")


def test_seating_an_appointment_not_arrived_arrives_it_too(owner, org, practitioner, patient):
    appointment = make_appointment(org, practitioner, patient, _at(9))
    body = _progress(owner.session_client(), appointment, "seated").json()
    assert body["status"] == "arrived"
    assert body["arrivedAt"] == body["seatedAt"]


def test_progress_refusals(owner, outsider, org, location, chairs, practitioner, patient):
    appointment = make_appointment(org, practitioner, patient, _at(9), location=location, status="cancelled")
    client = owner.session_client()
    assert_error(_progress(client, appointment, "arrived"), 409, "APPOINTMENT_TRANSITION_NOT_ALLOWED")
    assert_error(_progress(client, appointment, "teleported"), 400, "VALIDATION_ERROR")
    open_one = make_appointment(org, practitioner, patient, _at(10), location=location)
    their_location = LocationFactory(organization=outsider.organization)
    their_chair = Chair.objects.create(organization=outsider.organization, location=their_location, name="T")
    assert_error(_progress(client, open_one, "seated", chairId=str(their_chair.id)), 400, "VALIDATION_ERROR")
    other_location_chair = Chair.objects.create(organization=org, location=LocationFactory(organization=org), name="X")
    assert_error(_progress(client, open_one, "seated", chairId=str(other_location_chair.id)), 400, "VALIDATION_ERROR")
    theirs = make_appointment(
        outsider.organization,
        PractitionerFactory(organization=outsider.organization),
        PatientFactory(organization=outsider.organization),
        _at(9),
    )
    assert_error(_progress(client, theirs, "arrived"), 404, "NOT_FOUND")
    theirs.refresh_from_db()
    open_one.refresh_from_db()
    assert (theirs.status, open_one.status) == ("booked", "booked")
    assert not AppointmentVisit.objects.unscoped().filter(seated_at__isnull=False).exists()


def test_put_an_appointment_in_a_chair(
    owner, dentist, outsider, org, location, chairs, practitioner, patient, member_factory
):
    appointment = make_appointment(org, practitioner, patient, _at(9), location=location)
    client = dentist.session_client()
    path = f"/clinical/appointments/{appointment.id}/chair"

    put = client.put(path, {"chairId": str(chairs[0].id)}, content_type="application/json")
    assert put.status_code == 200, put.content
    assert put.json()["chair"]["name"] == "Surgery 2"
    cleared = client.put(path, {"chairId": None}, content_type="application/json")
    assert cleared.json()["chair"] is None

    chairs[1].active = False
    chairs[1].save()
    assert_error(
        client.put(path, {"chairId": str(chairs[1].id)}, content_type="application/json"), 400, "VALIDATION_ERROR"
    )
    assert_error(client.put(path, {}, content_type="application/json"), 400, "VALIDATION_ERROR")
    theirs = make_appointment(
        outsider.organization,
        PractitionerFactory(organization=outsider.organization),
        PatientFactory(organization=outsider.organization),
        _at(9),
    )
    assert_error(
        client.put(
            f"/clinical/appointments/{theirs.id}/chair", {"chairId": str(chairs[0].id)}, content_type="application/json"
        ),
        404,
        "NOT_FOUND",
    )
    telesales = member_factory(role="telesales", organization=org)
    assert_error(
        telesales.session_client().put(path, {"chairId": str(chairs[0].id)}, content_type="application/json"),
        403,
        "PERMISSION_DENIED",
    )


def test_a_chair_with_upcoming_appointments_is_not_deleted(owner, org, location, chairs, practitioner, patient):
    appointment = make_appointment(org, practitioner, patient, timezone.now() + timedelta(days=1), location=location)
    AppointmentVisit.objects.create(organization=org, appointment=appointment, chair=chairs[0])
    client = owner.session_client()
    assert_error(client.delete(f"/clinical/chairs/{chairs[0].id}"), 409, "CHAIR_IN_USE")
    Appointment.objects.for_org(org).filter(id=appointment.id).update(status="cancelled")
    assert client.delete(f"/clinical/chairs/{chairs[0].id}").status_code == 204
    assert AppointmentVisit.objects.for_org(org).get(appointment=appointment).chair_id is None
