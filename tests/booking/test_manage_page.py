"""The booking's management page for browsers (GET /booking/manage/{uid}) and its actions: the free times to move to
(GET …/page/times), moving (POST …/page/reschedule) and cancelling with a confirm tick (POST …/page/cancel). The same
rules as the JSON manage routes; what they refuse is a readable page (4xx) and nothing changes."""

from datetime import timedelta
from urllib.parse import urlencode

import pytest

from apps.appointments.models import Appointment, AppointmentStatus
from apps.booking.models import BookingHold
from tests.booking.helpers import PAGES, booked, held, manage, post_json, public, slot, wire
from tests.booking.test_hosted_page import FORM, HTML, assert_people_page, text
from tests.helpers import assert_error


def manage_page(uid: str):
    return public().get(manage(uid), HTTP_ACCEPT=HTML)


def times(uid: str, **query):
    return public().get(manage(uid, "page/times"), query, HTTP_ACCEPT=HTML)


def post_page(uid: str, action: str, data: dict | str, accept: str = HTML):
    body = data if isinstance(data, str) else urlencode(data)
    return public().post(manage(uid, f"page/{action}"), body, content_type=FORM, HTTP_ACCEPT=accept)


def move(uid: str, practitioner, starts_at, **extra):
    return post_page(uid, "reschedule", {"startsAt": starts_at.isoformat(), "practitionerId": str(practitioner.id)})


def cancel(uid: str, **data):
    return post_page(uid, "cancel", {"confirm": "yes"} | data)


def forms_to_move(body: str, uid: str) -> int:
    return body.count(f'action="/booking/manage/{uid}/page/reschedule"')


def appointment_of(uid: str) -> Appointment:
    return Appointment.objects.unscoped().get(id=BookingHold.objects.unscoped().get(uid=uid).appointment_id)


@pytest.fixture
def uid(page, practice) -> str:
    """Practitioner 0's booking on Tuesday 09:00 Rome: 24 hours ahead, just within the 1440-minute notice."""
    _, practitioners, _ = practice
    return booked(page["token"], str(practitioners[0].id), slot(0))["uid"]


# --- the page and its actions -----------------------------------------------------------------------------------------


def test_the_page_offers_its_actions_while_the_booking_may_change(uid):
    response = manage_page(uid)
    assert response.status_code == 200
    assert_people_page(response)
    body = text(response)
    assert "Your appointment: booked." in body and "Tuesday 4 March 2031, 09:00" in body
    assert "until 3 March 2031, 09:00" in body
    assert f'href="/booking/manage/{uid}/page/times"' in body
    assert f'action="/booking/manage/{uid}/page/cancel"' in body
    assert 'type="checkbox" id="confirm" name="confirm" value="yes" required>' in body  # not ticked


def test_the_free_times_are_the_booking_practitioners_by_default(uid, practice):
    _, practitioners, _ = practice
    response = times(uid)
    assert response.status_code == 200
    assert_people_page(response)
    body = text(response)
    assert "Free times on Tuesday 4 March 2031" in body  # the first day with a free time
    assert forms_to_move(body, uid) == 5  # 6 slots of practitioner 0, less the booking's own
    assert practitioners[1].name not in body.split("Free times on")[1]
    assert f'href="/booking/manage/{uid}/page/times?date=2031-03-31&amp;practitioner={practitioners[0].id}"' in body
    assert forms_to_move(text(times(uid, practitioner="any")), uid) == 11
    assert forms_to_move(text(times(uid, practitioner=str(practitioners[1].id), date="2031-03-04")), uid) == 6
    assert "No free times on this day" in text(times(uid, date="2031-03-05"))


def test_the_free_times_leave_out_other_visitors_holds(page, uid, practice):
    _, practitioners, _ = practice
    held(page["token"], str(practitioners[0].id), slot(3))
    assert forms_to_move(text(times(uid)), uid) == 4


def test_moving_the_booking_through_the_page(page, uid, practice):
    _, practitioners, _ = practice
    response = move(uid, practitioners[0], slot(4))
    assert response.status_code == 200
    body = text(response)
    assert "Your appointment has been moved to Tuesday 4 March 2031, 11:00." in body
    assert "Tuesday 4 March 2031, 11:00" in body and f'action="/booking/manage/{uid}/page/cancel"' in body
    appointment = appointment_of(uid)
    assert (appointment.starts_at, appointment.practitioner_id) == (slot(4), practitioners[0].id)
    assert public().get(manage(uid)).json()["startsAt"] == wire(slot(4))
    assert forms_to_move(text(times(uid)), uid) == 5  # 09:00 free again, 11:00 now taken

    to_other = move(uid, practitioners[1], slot(5))
    assert to_other.status_code == 200
    assert appointment_of(uid).practitioner_id == practitioners[1].id


def test_a_slot_taken_meanwhile_is_a_readable_409(page, uid, practice):
    _, practitioners, _ = practice
    shown = text(times(uid))
    assert slot(2).isoformat() in shown
    booked(page["token"], str(practitioners[0].id), slot(2), {"firstName": "Bea", "email": "bea@example.com"})
    response = move(uid, practitioners[0], slot(2))
    assert response.status_code == 409
    assert_people_page(response)
    body = text(response)
    assert "that time was just taken" in body and "Free times on Tuesday 4 March 2031" in body
    assert forms_to_move(body, uid) == 4
    assert appointment_of(uid).starts_at == slot(0)


def test_a_time_the_page_does_not_offer_is_refused_like_a_taken_one(uid, practice):
    _, practitioners, _ = practice
    for starts_at in (slot(0) + timedelta(minutes=10), slot(0) - timedelta(days=7), slot(6)):
        assert move(uid, practitioners[0], starts_at).status_code == 409
    assert appointment_of(uid).starts_at == slot(0)


def test_moving_to_the_time_it_already_has_says_so(uid, practice):
    _, practitioners, _ = practice
    response = move(uid, practitioners[0], slot(0))
    assert response.status_code == 409
    assert "already at that time" in text(response)


def test_an_unreadable_move_shows_the_times_again(uid):
    response = post_page(uid, "reschedule", {"startsAt": "soon", "practitionerId": "x"})
    assert response.status_code == 400
    assert "could not be read" in text(response) and "Free times on" in text(response)
    assert appointment_of(uid).starts_at == slot(0)


def test_cancelling_through_the_page(uid):
    response = cancel(uid, reason="Cannot make it")
    assert response.status_code == 200
    body = text(response)
    assert "Your appointment has been cancelled." in body and "Tuesday 4 March 2031, 09:00" in body
    assert "page/cancel" not in body and "page/times" not in body  # no actions any more
    appointment = appointment_of(uid)
    assert appointment.status == AppointmentStatus.CANCELLED and appointment.cancel_reason == "Cannot make it"
    assert public().get(manage(uid)).json()["status"] == "cancelled"
    again = cancel(uid)  # a double submit answers the cancelled booking, as the JSON route does
    assert again.status_code == 200 and "This appointment has been cancelled." in text(again)


def test_cancelling_needs_the_confirm_tick(uid):
    for data in ({}, {"confirm": "no"}, {"reason": "Busy"}):
        response = post_page(uid, "cancel", data)
        assert response.status_code == 400
        assert "Tick the box to confirm" in text(response)
    long_reason = cancel(uid, reason="x" * 501)
    assert long_reason.status_code == 400 and "500 characters" in text(long_reason)
    assert appointment_of(uid).status == AppointmentStatus.BOOKED


# --- refusals: changes closed, cancelled ------------------------------------------------------------------------------


def test_past_the_change_notice_the_page_says_so_and_refuses(uid, practice, clock):
    _, practitioners, _ = practice
    clock.move_to(slot(0) - timedelta(hours=23), tick=False)  # notice: 1440 minutes
    body = text(manage_page(uid))
    assert "can no longer be changed or cancelled here" in body
    assert "page/cancel" not in body and "page/times" not in body
    for response in (times(uid), move(uid, practitioners[0], slot(4)), cancel(uid)):
        assert response.status_code == 409
        assert_people_page(response)
        assert "can no longer be changed or cancelled online" in text(response)
    # The JSON routes refuse the same.
    assert_error(post_json(public(), manage(uid, "cancel"), {}), 409, "BOOKING_CHANGE_NOT_ALLOWED")
    appointment = appointment_of(uid)
    assert (appointment.status, appointment.starts_at) == (AppointmentStatus.BOOKED, slot(0))


def test_changes_open_again_when_the_practice_shortens_the_notice(api, page, uid, clock):
    clock.move_to(slot(0) - timedelta(hours=23), tick=False)
    assert cancel(uid).status_code == 409
    api.patch(f"{PAGES}/{page['id']}", {"changeNoticeMinutes": 60}, content_type="application/json")
    assert cancel(uid).status_code == 200
    assert appointment_of(uid).status == AppointmentStatus.CANCELLED


def test_a_cancelled_booking_offers_nothing_and_cannot_move(uid, practice):
    _, practitioners, _ = practice
    assert post_json(public(), manage(uid, "cancel"), {}).status_code == 200  # cancelled through the JSON route
    body = text(manage_page(uid))
    assert "This appointment has been cancelled." in body and "page/times" not in body
    for response in (times(uid), move(uid, practitioners[0], slot(4))):
        assert response.status_code == 409
        assert "cancelled, so it can no longer be changed online" in text(response)
    appointment = appointment_of(uid)
    assert (appointment.status, appointment.starts_at) == (AppointmentStatus.CANCELLED, slot(0))


def test_an_attended_booking_cannot_be_changed(uid, practice):
    _, practitioners, _ = practice
    Appointment.objects.unscoped().filter(id=appointment_of(uid).id).update(status=AppointmentStatus.ARRIVED)
    assert "page/cancel" not in text(manage_page(uid))
    assert cancel(uid).status_code == 409
    assert move(uid, practitioners[0], slot(4)).status_code == 409
    assert appointment_of(uid).status == AppointmentStatus.ARRIVED


# --- unknown uids and other practices ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["no-such-uid", "y" * 65])
def test_an_unknown_uid_is_the_not_found_page(uid, bad, practice):
    _, practitioners, _ = practice
    for response in (times(bad), move(bad, practitioners[0], slot(4)), cancel(bad)):
        assert response.status_code == 404
        assert_people_page(response)
        assert "This booking is not available" in text(response)
    # API clients keep the envelope.
    assert_error(public().get(manage(bad, "page/times")), 404, "NOT_FOUND")
    assert_error(post_page(bad, "cancel", {"confirm": "yes"}, accept="application/json"), 404, "NOT_FOUND")
    assert appointment_of(uid).status == AppointmentStatus.BOOKED


def test_a_hold_key_is_not_a_management_uid(page, practice):
    _, practitioners, _ = practice
    hold_id = held(page["token"], str(practitioners[0].id), slot(1))["holdId"]
    assert times(hold_id).status_code == 404
    assert cancel(hold_id).status_code == 404


def test_an_erased_patients_uid_is_not_found(api, uid, owner):
    patient_id = appointment_of(uid).patient_id
    assert api.delete(f"/patients/{patient_id}").status_code == 200
    assert times(uid).status_code == 404 and cancel(uid).status_code == 404


def test_another_practices_booking_reaches_only_its_own_practice(uid, other_page, practice, outsider):
    """A uid is the boundary: another practice's booking lists its own practice's times only, and cannot be moved
    onto this practice's practitioners or slots (409, nothing changes on either side)."""
    from apps.patients.models import Practitioner

    _, practitioners, _ = practice
    theirs = Practitioner.objects.for_org(outsider.organization).order_by("name", "id").first()
    other_uid = booked(other_page["token"], str(theirs.id), slot(0))["uid"]
    body = text(times(other_uid, practitioner="any"))
    assert practitioners[0].name not in body and practitioners[1].name not in body
    assert forms_to_move(body, other_uid) == 11
    assert forms_to_move(text(times(other_uid, practitioner=str(practitioners[0].id))), other_uid) == 5
    assert move(other_uid, practitioners[0], slot(4)).status_code == 409
    assert (appointment_of(other_uid).practitioner_id, appointment_of(other_uid).starts_at) == (theirs.id, slot(0))
    assert move(uid, theirs, slot(4)).status_code == 409
    assert appointment_of(uid).practitioner_id == practitioners[0].id
    assert Appointment.objects.for_org(outsider.organization).count() == 1


# --- guards -----------------------------------------------------------------------------------------------------------


def test_the_actions_share_the_hold_bucket_and_answer_a_page(settings, uid, practice):
    _, practitioners, _ = practice
    settings.SVC_BOOKING_HOLD_BUCKET = (1, 0.001)
    assert move(uid, practitioners[0], slot(4)).status_code == 200
    response = cancel(uid)
    assert response.status_code == 429 and int(response["Retry-After"]) >= 1
    assert "Too many attempts" in text(response)
    assert_error(post_json(public(), manage(uid, "cancel"), {}), 429, "RATE_LIMITED")
    assert appointment_of(uid).status == AppointmentStatus.BOOKED


def test_the_times_take_from_the_availability_bucket(settings, page, uid):
    settings.SVC_BOOKING_AVAILABILITY_BUCKET = (1, 0.001)
    assert times(uid).status_code == 200
    assert times(uid).status_code == 429


def test_a_body_over_256_kib_is_refused_before_parsing(uid):
    response = post_page(uid, "cancel", "confirm=yes&reason=" + "a" * (256 * 1024))
    assert response.status_code == 413
    assert "Too much was sent" in text(response) and "Nothing was changed" in text(response)
    assert appointment_of(uid).status == AppointmentStatus.BOOKED


def test_the_abuse_screen_covers_the_actions(settings, uid):
    settings.SVC_PUBLIC_SCREEN_RATE = "2/m"
    times(uid)
    times(uid)
    response = cancel(uid)
    assert response.status_code == 429 and "Too many attempts" in text(response)
    assert appointment_of(uid).status == AppointmentStatus.BOOKED


@pytest.mark.parametrize(
    ("method", "action"), [("get", "page/cancel"), ("get", "page/reschedule"), ("post", "page/times")]
)
def test_other_methods_are_refused(uid, method, action):
    assert getattr(public(), method)(manage(uid, action)).status_code == 405
