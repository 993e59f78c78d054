"""The hosted booking page (HTML, no JavaScript): GET /booking/{token} with its days and slots, the slot button's
form post holding the slot, the details form's post booking it, friendly pages for a taken slot, an expired hold and
bad details, the 404 page, and the route's guards (buckets, 256 KiB cap, abuse screen) shown as pages to browsers."""

from datetime import timedelta

import pytest

from apps.appointments.models import Appointment
from apps.booking.models import BookingHold, HoldStatus
from apps.patients.models import Patient
from tests.booking.helpers import FIRST_SLOT, NOW, TUESDAY, held, public, slot
from tests.helpers import assert_error

HTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
FORM = "application/x-www-form-urlencoded"


def get_page(token: str, **query):
    return public().get(f"/booking/{token}", query, HTTP_ACCEPT=HTML)


def post_form(token: str, action: str, data: dict, **extra):
    return public().post(f"/booking/{token}/page/{action}", data, content_type=FORM, HTTP_ACCEPT=HTML, **extra)


def encode(data: dict) -> str:
    from urllib.parse import urlencode

    return urlencode(data)


def hold_form(token, practitioner, starts_at, **extra):
    data = {"startsAt": starts_at.isoformat(), "practitionerId": str(practitioner.id), **extra}
    return public().post(f"/booking/{token}/page/hold", encode(data), content_type=FORM, HTTP_ACCEPT=HTML)


def complete_form(token, hold_id, **fields):
    data = {"holdId": hold_id, "firstName": "Ada", "lastName": "Lovelace", "email": "ada@example.com"} | fields
    return public().post(f"/booking/{token}/page/complete", encode(data), content_type=FORM, HTTP_ACCEPT=HTML)


def text(response) -> str:
    assert response["Content-Type"].startswith("text/html"), response.content
    return response.content.decode()


def assert_people_page(response):
    assert "default-src 'none'" in response["Content-Security-Policy"]
    assert response["Cache-Control"] == "no-store"
    assert response["X-Frame-Options"] == "DENY"
    assert "<script" not in text(response)


# --- the day ----------------------------------------------------------------------------------------------------------


def test_the_page_opens_on_the_first_day_with_free_times(page, practice, owner):
    _, _, treatment = practice
    response = get_page(page["token"])
    assert response.status_code == 200
    assert_people_page(response)
    body = text(response)
    assert owner.organization.name in body
    assert "Tuesday 4 March 2031" in body
    assert f'href="/booking/{page["token"]}?date=2031-03-03"' in body  # every bookable day is a link
    assert f'href="/booking/{page["token"]}?date=2031-03-31"' in body
    assert body.count('/page/hold"') == 12  # 6 times x 2 practitioners, each a form to hold
    assert ">09:00<" in body and ">11:30<" in body  # local (Rome) times
    assert FIRST_SLOT.isoformat() in body
    assert treatment.name in body


def test_a_day_without_hours_says_so(page):
    body = text(get_page(page["token"], date="2031-03-05"))
    assert "Wednesday 5 March 2031" in body and "No free times on this day" in body


def test_a_day_outside_the_horizon_or_unreadable_falls_back(page):
    assert "Tuesday 4 March 2031" in text(get_page(page["token"], date="2032-01-01"))
    assert "Tuesday 4 March 2031" in text(get_page(page["token"], date="not-a-day"))


def test_the_page_shows_the_same_slots_as_availability(page, practice):
    _, practitioners, _ = practice
    held(page["token"], str(practitioners[0].id), slot(0))  # another visitor's hold hides that slot
    body = text(get_page(page["token"], date=TUESDAY))
    assert body.count('/page/hold"') == 11


def test_unknown_token_is_the_not_found_page(page, other_page):
    response = get_page("no-such-token")
    assert response.status_code == 404
    assert_people_page(response)
    assert "This booking page is not available" in text(response)
    assert_error(public().get("/booking/no-such-token"), 404, "NOT_FOUND")  # an API client keeps the envelope


def test_a_rotated_token_is_the_not_found_page(api, page):
    api.post(f"/settings/booking-pages/{page['id']}/token/rotate")
    assert get_page(page["token"]).status_code == 404


# --- hold and complete ------------------------------------------------------------------------------------------------


def test_booking_through_the_page(page, practice, owner):
    location, practitioners, treatment = practice
    response = hold_form(page["token"], practitioners[0], slot(2), treatmentId=str(treatment.id))
    assert response.status_code == 200
    body = text(response)
    assert "Tuesday 4 March 2031, 10:00" in body and 'name="holdId"' in body
    hold = BookingHold.objects.unscoped().get(page_id=page["id"])
    assert hold.status == HoldStatus.ACTIVE and hold.treatment_id == treatment.id

    response = complete_form(page["token"], hold.key, phone="+39 333 123 4567")
    assert response.status_code == 201
    body = text(response)
    assert "Your appointment is booked" in body and "Tuesday 4 March 2031, 10:00" in body
    hold.refresh_from_db()
    assert f"/booking/manage/{hold.uid}" in body
    appointment = Appointment.objects.for_org(owner.organization).get(id=hold.appointment_id)
    assert appointment.starts_at == slot(2) and appointment.practitioner_id == practitioners[0].id
    assert appointment.location_id == location.id
    assert Patient.objects.for_org(owner.organization).get(id=appointment.patient_id).email == "ada@example.com"

    again = complete_form(page["token"], hold.key)  # the same booking again, not a second one
    assert again.status_code == 200 and f"/booking/manage/{hold.uid}" in text(again)
    assert Appointment.objects.for_org(owner.organization).count() == 1


def test_a_taken_slot_shows_the_day_again_with_a_message(page, practice):
    _, practitioners, _ = practice
    held(page["token"], str(practitioners[0].id), slot(1))
    response = hold_form(page["token"], practitioners[0], slot(1))
    assert response.status_code == 409
    body = text(response)
    assert "that time was just taken" in body and "Tuesday 4 March 2031" in body
    assert body.count('/page/hold"') == 11


def test_a_malformed_hold_post_shows_the_day_again(page, practice):
    response = post_form(page["token"], "hold", encode({"startsAt": "soon", "practitionerId": "x"}))
    assert response.status_code == 400
    assert "could not be read" in text(response)


def test_missing_contact_details_show_the_form_again(page, practice):
    _, practitioners, _ = practice
    hold_form(page["token"], practitioners[0], slot(0))
    hold = BookingHold.objects.unscoped().get(page_id=page["id"])
    response = complete_form(page["token"], hold.key, email="", firstName="Ada")
    assert response.status_code == 400
    body = text(response)
    assert "give an e-mail address or a phone number" in body and 'value="Ada"' in body
    assert not Appointment.objects.unscoped().exists()


def test_an_expired_hold_shows_the_day_again(page, practice, clock):
    _, practitioners, _ = practice
    hold_form(page["token"], practitioners[0], slot(0))
    hold = BookingHold.objects.unscoped().get(page_id=page["id"])
    clock.move_to(NOW + timedelta(minutes=11), tick=False)
    response = complete_form(page["token"], hold.key)
    assert response.status_code == 409
    assert "Your hold on that time ran out" in text(response)
    assert complete_form(page["token"], "no-such-hold").status_code == 409


def test_another_practices_page_cannot_complete_this_hold(page, other_page, practice):
    _, practitioners, _ = practice
    hold_form(page["token"], practitioners[0], slot(0))
    hold = BookingHold.objects.unscoped().get(page_id=page["id"])
    response = complete_form(other_page["token"], hold.key)
    assert response.status_code == 409  # not their hold: the day again
    assert not Appointment.objects.unscoped().exists()


def test_another_practices_slot_cannot_be_held(page, other_page, practice):
    _, practitioners, _ = practice
    assert hold_form(other_page["token"], practitioners[0], slot(0)).status_code == 409
    assert not BookingHold.objects.unscoped().exists()


def test_unknown_token_on_the_posts_is_the_not_found_page(page, practice):
    _, practitioners, _ = practice
    assert hold_form("nope", practitioners[0], slot(0)).status_code == 404
    assert "This booking page is not available" in text(complete_form("nope", "x"))


# --- guards -----------------------------------------------------------------------------------------------------------


def test_the_hold_bucket_is_shared_and_shown_as_a_page(settings, page, practice):
    settings.SVC_BOOKING_HOLD_BUCKET = (1, 0.001)
    _, practitioners, _ = practice
    assert hold_form(page["token"], practitioners[0], slot(0)).status_code == 200
    response = hold_form(page["token"], practitioners[0], slot(1))
    assert response.status_code == 429 and int(response["Retry-After"]) >= 1
    assert "Too many attempts" in text(response)


def test_the_page_takes_from_the_availability_bucket(settings, page):
    settings.SVC_BOOKING_AVAILABILITY_BUCKET = (1, 0.001)
    assert get_page(page["token"]).status_code == 200
    assert public().get(f"/booking/{page['token']}/availability", {"start": TUESDAY, "end": TUESDAY}).status_code == 429


def test_the_complete_bucket(settings, page, practice):
    settings.SVC_BOOKING_COMPLETE_BUCKET = (1, 0.001)
    assert complete_form(page["token"], "x").status_code == 409
    assert complete_form(page["token"], "x").status_code == 429


def test_a_body_over_256_kib_is_refused_before_parsing(page, practice):
    response = post_form(page["token"], "complete", "notes=" + "a" * (256 * 1024))
    assert response.status_code == 413
    assert "Too much was sent" in text(response)


def test_the_abuse_screen_covers_the_page(settings, page):
    settings.SVC_PUBLIC_SCREEN_RATE = "2/m"
    get_page(page["token"])
    get_page(page["token"])
    response = get_page(page["token"])
    assert response.status_code == 429 and "Too many attempts" in text(response)


@pytest.mark.parametrize("method", ["put", "delete"])
def test_other_methods_are_refused(page, method):
    assert getattr(public(), method)(f"/booking/{page['token']}/page/hold").status_code == 405


# --- the management link ----------------------------------------------------------------------------------------------


def test_the_manage_link_is_a_page_for_browsers_and_json_for_clients(page, practice):
    _, practitioners, _ = practice
    hold_form(page["token"], practitioners[0], slot(0))
    hold = BookingHold.objects.unscoped().get(page_id=page["id"])
    complete_form(page["token"], hold.key)
    hold.refresh_from_db()
    response = public().get(f"/booking/manage/{hold.uid}", HTTP_ACCEPT=HTML)
    assert response.status_code == 200
    assert_people_page(response)
    body = text(response)
    assert "Tuesday 4 March 2031, 09:00" in body and practitioners[0].name in body
    assert "until 3 March 2031, 09:00" in body  # the page's 1440-minute change notice, local time
    assert public().get(f"/booking/manage/{hold.uid}").json()["uid"] == hold.uid
    missing = public().get("/booking/manage/no-such-uid", HTTP_ACCEPT=HTML)
    assert missing.status_code == 404 and "not available" in text(missing)
