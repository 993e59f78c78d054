"""The public booking surface: page config, availability in the practice's timezone, holds, completes (idempotent by
the hold), management by uid, and tokens of every kind (valid, rotated, unknown, another practice's)."""

from datetime import timedelta

import pytest

from apps.appointments.models import Appointment, AppointmentStatus
from apps.booking.models import BookingHold
from apps.journeys.models import Journey
from apps.patients.models import Patient
from tests.booking.helpers import (
    NOW,
    PAGES,
    PATIENT,
    TUESDAY,
    availability,
    booked,
    complete,
    config,
    held,
    hold,
    manage,
    post_json,
    public,
    slot,
    wire,
)
from tests.factories import PatientFactory
from tests.helpers import assert_error


def starts(response) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.content
    return [(item["practitionerId"], item["startsAt"]) for item in response.json()["slots"]]


# --- config -----------------------------------------------------------------------------------------------------------


def test_config_shows_the_offer_and_rules(page, practice, owner):
    location, practitioners, treatment = practice
    response = config(page["token"])
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["name"] == "Book online"
    assert body["practiceName"] == owner.organization.name
    assert body["timezone"] == "Europe/Rome"
    assert {p["id"] for p in body["practitioners"]} == {str(p.id) for p in practitioners}
    assert [t["id"] for t in body["treatments"]] == [str(treatment.id)]
    assert [loc["id"] for loc in body["locations"]] == [str(location.id)]
    assert (body["leadTimeMinutes"], body["horizonDays"], body["slotMinutes"]) == (120, 28, 30)
    assert (body["firstDay"], body["lastDay"]) == ("2031-03-03", "2031-03-31")


def test_config_of_a_page_limited_to_one_practitioner(api, practice):
    _, practitioners, _ = practice
    response = post_json(api, PAGES, {"name": "Dr One", "practitionerIds": [str(practitioners[0].id)]})
    body = config(response.json()["token"]).json()
    assert [p["id"] for p in body["practitioners"]] == [str(practitioners[0].id)]


@pytest.mark.parametrize("token", ["nope", "x" * 65, "manage"])
def test_unknown_tokens_are_404(page, token):
    assert_error(config(token), 404, "NOT_FOUND")
    assert_error(availability(token), 404, "NOT_FOUND")


def test_another_practices_token_serves_only_that_practice(page, other_page, practice, outsider):
    body = config(other_page["token"]).json()
    _, practitioners, _ = practice
    assert body["practiceName"] == outsider.organization.name
    assert not {p["id"] for p in body["practitioners"]} & {str(p.id) for p in practitioners}
    # Our practitioner through their token: not a slot their page offers.
    assert starts(availability(other_page["token"], practitionerId=str(practitioners[0].id))) == []
    assert_error(hold(other_page["token"], str(practitioners[0].id), slot(0)), 409, "BOOKING_SLOT_UNAVAILABLE")
    # Our hold completed through their token: no such hold.
    ours = held(page["token"], str(practitioners[0].id), slot(0))
    assert_error(complete(other_page["token"], ours["holdId"]), 404, "NOT_FOUND")
    assert not Appointment.objects.for_org(outsider.organization).exists()


# --- availability -----------------------------------------------------------------------------------------------------


def test_availability_is_the_working_hours_in_the_practice_timezone(page, practice):
    _, practitioners, _ = practice
    response = availability(page["token"])
    assert response.json()["timezone"] == "Europe/Rome"
    found = starts(response)
    # 09:00-12:00 in Rome is 08:00-11:00 UTC: six 30-minute slots for each practitioner.
    expected = sorted((str(p.id), wire(slot(n))) for p in practitioners for n in range(6))
    assert sorted(found) == expected
    item = response.json()["slots"][0]
    assert set(item) == {"practitionerId", "locationId", "startsAt", "endsAt"}


def test_appointments_and_holds_are_not_offered(page, practice, owner):
    _, practitioners, _ = practice
    first = practitioners[0]
    Appointment.objects.create(
        organization=owner.organization,
        patient=PatientFactory(organization=owner.organization),
        practitioner=first,
        starts_at=slot(1),
        ends_at=slot(2),
    )
    held(page["token"], str(first.id), slot(3))
    mine = {start for pid, start in starts(availability(page["token"])) if pid == str(first.id)}
    assert mine == {wire(slot(n)) for n in (0, 2, 4, 5)}


def test_lead_time_and_horizon(api, page, practice, clock):
    clock.move_to(slot(0) - timedelta(minutes=90), tick=False)  # Tuesday 07:30 UTC: lead time 120 minutes
    found = {start for _, start in starts(availability(page["token"]))}
    assert wire(slot(0)) not in found and wire(slot(1)) in found  # 06:30 + 120 minutes = 08:30
    clock.move_to(NOW, tick=False)
    assert_error(availability(page["token"], start="2031-03-03", end="2031-04-01"), 400, "VALIDATION_ERROR")
    # Days beyond the horizon and in the past are simply not offered.
    api.patch(f"{PAGES}/{page['id']}", {"horizonDays": 1}, content_type="application/json")
    assert starts(availability(page["token"], start="2031-03-01", end="2031-03-02")) == []
    assert starts(availability(page["token"], start=TUESDAY, end=TUESDAY))
    assert starts(availability(page["token"], start="2031-03-11", end="2031-03-11")) == []


@pytest.mark.parametrize(
    "params",
    [{"start": "tuesday", "end": TUESDAY}, {"start": TUESDAY}, {"start": TUESDAY, "end": "2031-03-01"}, {"x": "1"}],
    ids=["bad-date", "no-end", "end-before-start", "unknown"],
)
def test_bad_availability_queries_are_400(page, params):
    assert_error(public().get(f"/booking/{page['token']}/availability", params), 400, "VALIDATION_ERROR")


# --- holds ------------------------------------------------------------------------------------------------------------


def test_a_hold_blocks_its_slot_until_it_expires(page, practice, clock):
    _, practitioners, treatment = practice
    pid = str(practitioners[0].id)
    first = held(page["token"], pid, slot(0))
    assert set(first) == {"holdId", "practitionerId", "locationId", "treatmentId", "startsAt", "endsAt", "expiresAt"}
    assert first["expiresAt"] == wire(NOW + timedelta(minutes=10))
    assert_error(hold(page["token"], pid, slot(0)), 409, "BOOKING_SLOT_UNAVAILABLE")
    assert hold(page["token"], str(practitioners[1].id), slot(0)).status_code == 201  # another practitioner

    clock.move_to(NOW + timedelta(minutes=11), tick=False)
    assert_error(complete(page["token"], first["holdId"]), 409, "BOOKING_HOLD_EXPIRED")
    again = hold(page["token"], pid, slot(0), treatmentId=str(treatment.id))
    assert again.status_code == 201, again.content
    assert again.json()["treatmentId"] == str(treatment.id)


@pytest.mark.parametrize(
    "starts_at",
    [slot(0) + timedelta(minutes=10), slot(6), slot(0) - timedelta(days=1)],
    ids=["off-grid", "after-hours", "past"],
)
def test_times_the_page_does_not_offer_are_409(page, practice, starts_at):
    _, practitioners, _ = practice
    assert_error(hold(page["token"], str(practitioners[0].id), starts_at), 409, "BOOKING_SLOT_UNAVAILABLE")
    assert not BookingHold.objects.unscoped().exists()


@pytest.mark.parametrize(
    "body",
    [{}, {"practitionerId": "x", "startsAt": "2031-03-04T08:00:00Z"}, {"startsAt": "2031-03-04T08:00:00"}, []],
    ids=["empty", "bad-id", "naive-time", "list"],
)
def test_bad_hold_bodies_are_400(page, body):
    assert_error(post_json(public(), f"/booking/{page['token']}/holds", body), 400, "VALIDATION_ERROR")


def test_a_treatment_the_page_does_not_offer_is_400(api, page, practice, owner, outsider):
    from apps.journeys.models import Treatment

    _, practitioners, treatment = practice
    api.patch(f"{PAGES}/{page['id']}", {"treatmentIds": [str(treatment.id)]}, content_type="application/json")
    other = Treatment.objects.create(organization=owner.organization, name="Whitening")
    theirs = Treatment.objects.create(organization=outsider.organization, name="Theirs")
    for treatment_id in (other.id, theirs.id):
        response = hold(page["token"], str(practitioners[0].id), slot(0), treatmentId=str(treatment_id))
        assert_error(response, 400, "VALIDATION_ERROR")


# --- complete ---------------------------------------------------------------------------------------------------------


def test_complete_books_the_patient_and_opens_a_journey(page, practice, owner):
    location, practitioners, treatment = practice
    hold_body = hold(page["token"], str(practitioners[0].id), slot(2), treatmentId=str(treatment.id)).json()
    response = complete(page["token"], hold_body["holdId"])
    assert response.status_code == 201, response.content
    booking = response.json()
    assert set(booking) == {
        "uid",
        "status",
        "practitioner",
        "location",
        "treatment",
        "startsAt",
        "endsAt",
        "canChangeUntil",
    }
    assert booking["status"] == "booked"
    assert booking["startsAt"] == wire(slot(2)) and booking["endsAt"] == wire(slot(3))
    assert booking["practitioner"]["id"] == str(practitioners[0].id)
    assert booking["treatment"] == {"id": str(treatment.id), "name": treatment.name}
    assert booking["location"]["id"] == str(location.id)

    patient = Patient.objects.for_org(owner.organization).get()
    assert (patient.first_name, patient.email) == ("Ada", "ada@example.com")
    appointment = Appointment.objects.for_org(owner.organization).get()
    journey = Journey.objects.for_org(owner.organization).get()
    assert appointment.patient_id == patient.id and appointment.journey_id == journey.id
    assert journey.treatment_id == treatment.id and journey.source == "online_booking"
    # The slot is gone from availability.
    assert (str(practitioners[0].id), wire(slot(2))) not in starts(availability(page["token"]))


def test_complete_is_idempotent_by_the_hold(page, practice, owner):
    _, practitioners, _ = practice
    hold_id = held(page["token"], str(practitioners[0].id), slot(0))["holdId"]
    first = complete(page["token"], hold_id)
    assert first.status_code == 201
    second = complete(page["token"], hold_id, {"firstName": "Someone", "email": "else@example.com"})
    assert second.status_code == 200
    assert second.json() == first.json()
    assert Appointment.objects.for_org(owner.organization).count() == 1
    assert Patient.objects.for_org(owner.organization).count() == 1


def test_complete_matches_a_known_patient_by_email_or_phone(page, practice, owner):
    _, practitioners, _ = practice
    known = PatientFactory(organization=owner.organization, email="ADA@example.com", phone_mobile="+39 333 1234567")
    booked(page["token"], str(practitioners[0].id), slot(0), {"firstName": "A", "email": "ada@example.com"})
    booked(page["token"], str(practitioners[0].id), slot(1), {"firstName": "A", "phone": "0039 333 123 4567"})
    assert Patient.objects.for_org(owner.organization).count() == 1
    assert set(Appointment.objects.for_org(owner.organization).values_list("patient_id", flat=True)) == {known.id}
    # One journey: the second booking reuses the open one of the same treatment.
    assert Journey.objects.for_org(owner.organization).count() == 1


@pytest.mark.parametrize(
    "body",
    [{"firstName": "Ada"}, {"email": "a@example.com"}, {"firstName": "A", "email": "nope"}, {"firstName": "A", "x": 1}],
    ids=["no-contact", "no-name", "bad-email", "unknown-field"],
)
def test_bad_complete_bodies_are_400_and_book_nothing(page, practice, owner, body):
    _, practitioners, _ = practice
    hold_id = held(page["token"], str(practitioners[0].id), slot(0))["holdId"]
    assert_error(complete(page["token"], hold_id, body), 400, "VALIDATION_ERROR")
    assert not Appointment.objects.for_org(owner.organization).exists()


def test_unknown_hold_is_404(page):
    assert_error(complete(page["token"], "not-a-hold"), 404, "NOT_FOUND")


def test_the_team_booking_the_held_slot_meanwhile_is_409(page, practice, owner):
    _, practitioners, _ = practice
    hold_id = held(page["token"], str(practitioners[0].id), slot(0))["holdId"]
    Appointment.objects.create(
        organization=owner.organization,
        patient=PatientFactory(organization=owner.organization),
        practitioner=practitioners[0],
        starts_at=slot(0),
        ends_at=slot(1),
    )
    assert_error(complete(page["token"], hold_id), 409, "BOOKING_SLOT_UNAVAILABLE")
    assert Appointment.objects.for_org(owner.organization).count() == 1


# --- manage by uid ----------------------------------------------------------------------------------------------------


def test_view_cancel_and_reschedule_by_uid(page, practice, owner):
    _, practitioners, _ = practice
    booking = booked(page["token"], str(practitioners[0].id), slot(0))
    uid = booking["uid"]
    assert public().get(manage(uid)).json() == booking

    moved = post_json(public(), manage(uid, "reschedule"), {"startsAt": wire(slot(4))})
    assert moved.status_code == 200, moved.content
    assert moved.json()["startsAt"] == wire(slot(4)) and moved.json()["uid"] == uid
    other = post_json(
        public(), manage(uid, "reschedule"), {"startsAt": wire(slot(5)), "practitionerId": str(practitioners[1].id)}
    )
    assert other.json()["practitioner"]["id"] == str(practitioners[1].id)
    # A slot that is not free is 409.
    booked(page["token"], str(practitioners[0].id), slot(1), {"firstName": "B", "email": "b@example.com"})
    taken = post_json(
        public(), manage(uid, "reschedule"), {"startsAt": wire(slot(1)), "practitionerId": str(practitioners[0].id)}
    )
    assert_error(taken, 409, "BOOKING_SLOT_UNAVAILABLE")

    cancelled = post_json(public(), manage(uid, "cancel"), {"reason": "Cannot make it"})
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["status"] == "cancelled"
    assert post_json(public(), manage(uid, "cancel"), {}).json()["status"] == "cancelled"
    appointment = Appointment.objects.for_org(owner.organization).get(starts_at=slot(5))
    assert appointment.status == AppointmentStatus.CANCELLED and appointment.cancel_reason == "Cannot make it"
    assert (str(practitioners[1].id), wire(slot(5))) in starts(availability(page["token"]))
    assert_error(
        post_json(public(), manage(uid, "reschedule"), {"startsAt": wire(slot(3))}), 409, "BOOKING_CHANGE_NOT_ALLOWED"
    )


def test_changes_close_at_the_pages_notice(api, page, practice, clock):
    _, practitioners, _ = practice
    uid = booked(page["token"], str(practitioners[0].id), slot(3))["uid"]
    clock.move_to(slot(3) - timedelta(hours=23), tick=False)  # notice: 1440 minutes
    body = assert_error(post_json(public(), manage(uid, "cancel"), {}), 409, "BOOKING_CHANGE_NOT_ALLOWED")
    assert body["details"] == {"changeNoticeMinutes": 1440}
    assert_error(
        post_json(public(), manage(uid, "reschedule"), {"startsAt": wire(slot(5))}), 409, "BOOKING_CHANGE_NOT_ALLOWED"
    )
    assert public().get(manage(uid)).json()["status"] == "booked"
    api.patch(f"{PAGES}/{page['id']}", {"changeNoticeMinutes": 60}, content_type="application/json")
    assert post_json(public(), manage(uid, "cancel"), {}).json()["status"] == "cancelled"


def test_a_booking_stays_manageable_after_the_token_rotates(api, page, practice):
    _, practitioners, _ = practice
    uid = booked(page["token"], str(practitioners[0].id), slot(0))["uid"]
    post_json(api, f"{PAGES}/{page['id']}/token/rotate")
    assert public().get(manage(uid)).status_code == 200


@pytest.mark.parametrize("uid", ["nope", "y" * 65])
def test_unknown_uids_are_404(page, uid):
    assert_error(public().get(manage(uid)), 404, "NOT_FOUND")
    assert_error(post_json(public(), manage(uid, "cancel"), {}), 404, "NOT_FOUND")
    assert_error(post_json(public(), manage(uid, "reschedule"), {"startsAt": wire(slot(0))}), 404, "NOT_FOUND")


def test_a_hold_key_is_not_a_management_uid(page, practice):
    _, practitioners, _ = practice
    hold_id = held(page["token"], str(practitioners[0].id), slot(0))["holdId"]
    assert_error(public().get(manage(hold_id)), 404, "NOT_FOUND")


def test_credentials_are_ignored_on_public_routes(api, page):
    assert api.get(f"/booking/{page['token']}/config").status_code == 200


def test_patient_details_given_once_are_kept_with_the_patient_only(page, practice, owner):
    _, practitioners, _ = practice
    booked(page["token"], str(practitioners[0].id), slot(0), PATIENT | {"notes": "Nervous patient"})
    assert Appointment.objects.for_org(owner.organization).get().notes == "Nervous patient"


def test_erasing_the_patient_retires_the_management_uid(api, page, practice, owner):
    _, practitioners, _ = practice
    uid = booked(page["token"], str(practitioners[0].id), slot(0))["uid"]
    patient = Patient.objects.for_org(owner.organization).get()
    assert api.delete(f"/patients/{patient.id}").status_code == 200
    assert_error(public().get(manage(uid)), 404, "NOT_FOUND")
    assert_error(post_json(public(), manage(uid, "cancel"), {}), 404, "NOT_FOUND")
    assert (str(practitioners[0].id), wire(slot(0))) in starts(availability(page["token"]))


def test_nul_and_out_of_range_input_is_never_a_server_error(client, page):
    """A NUL in a token, uid or hold key is the same 404 as any unknown one (PostgreSQL text cannot hold it), and a
    date at the calendar's edge is 400 (moving it to the practice's timezone would overflow)."""
    token = page["token"]
    for path in ("/booking/%00/config", f"/booking/{token}%00/config", "/booking/manage/%00"):
        assert client.get(path).status_code == 404, path
    body = {"firstName": "Nul", "email": "nul@example.com"}
    for path in ("/booking/manage/%00/cancel", f"/booking/{token}/holds/%00/complete"):
        response = client.post(path, body if "complete" in path else {}, content_type="application/json")
        assert response.status_code == 404, (path, response.content)
    far = client.post(
        f"/booking/{token}/holds",
        {"practitionerId": "00000000-0000-0000-0000-000000000001", "startsAt": "9999-12-31T23:30:00Z"},
        content_type="application/json",
    )
    assert far.status_code == 400 and far.json()["details"]["fields"]["startsAt"], far.content
