"""Marketing consent on online booking: the page's consent wording (settings, config), the JSON complete route's
optional marketingConsent and the hosted details form's unticked checkbox. Consent is recorded only when ticked, for
the channels the patient gave, with the wording shown as evidence; nothing otherwise."""

from apps.appointments.models import Appointment
from apps.booking.models import DEFAULT_CONSENT_TEXT, BookingHold
from apps.patients.models import MarketingConsent, Patient
from tests.booking.helpers import PAGES, PATIENT, booked, complete, config, held, post_json, slot
from tests.booking.test_hosted_page import complete_form, hold_form, text
from tests.factories import PatientFactory
from tests.helpers import assert_error

WORDING = "Yes, send me the clinic's newsletter and offers. I can unsubscribe at any time."


def consents(organization):
    return list(MarketingConsent.objects.for_org(organization).order_by("channel"))


# --- the wording (settings and config) --------------------------------------------------------------------------------


def test_a_page_has_default_wording_that_the_practice_can_change(api, page):
    assert page["consentText"] == DEFAULT_CONSENT_TEXT
    assert config(page["token"]).json()["consentText"] == DEFAULT_CONSENT_TEXT
    changed = api.patch(f"{PAGES}/{page['id']}", {"consentText": WORDING}, content_type="application/json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["consentText"] == WORDING
    assert config(page["token"]).json()["consentText"] == WORDING
    created = post_json(api, PAGES, {"name": "Whitening", "consentText": WORDING})
    assert created.status_code == 201 and created.json()["consentText"] == WORDING


def test_blank_or_overlong_wording_is_refused(api, page):
    for wording in ("", "   ", "x" * 2001, 42):
        response = api.patch(f"{PAGES}/{page['id']}", {"consentText": wording}, content_type="application/json")
        assert_error(response, 400, "VALIDATION_ERROR")
    assert api.get(f"{PAGES}/{page['id']}").json()["consentText"] == DEFAULT_CONSENT_TEXT


def test_another_practice_cannot_change_the_wording(outsider, page):
    response = outsider.api_client().patch(
        f"{PAGES}/{page['id']}", {"consentText": WORDING}, content_type="application/json"
    )
    assert_error(response, 404, "NOT_FOUND")
    assert config(page["token"]).json()["consentText"] == DEFAULT_CONSENT_TEXT


# --- JSON: POST /booking/{token}/holds/{holdId}/complete ----------------------------------------------------------


def test_ticked_consent_is_recorded_for_each_channel_given_with_the_wording(api, page, practice, owner):
    api.patch(f"{PAGES}/{page['id']}", {"consentText": WORDING}, content_type="application/json")
    _, practitioners, _ = practice
    booking = booked(page["token"], str(practitioners[0].id), slot(0), PATIENT | {"marketingConsent": True})
    patient = Patient.objects.for_org(owner.organization).get()
    records = consents(owner.organization)
    assert [(c.channel, c.status, c.source) for c in records] == [
        ("email", "granted", "booking_page"),
        ("sms", "granted", "booking_page"),
    ]
    for record in records:
        assert record.patient_id == patient.id and record.recorded_by is None
        assert f"Wording shown: {WORDING}" in record.evidence
        assert page["id"] in record.evidence
        appointment = Appointment.objects.for_org(owner.organization).get()
        assert str(appointment.id) in record.evidence
    assert (patient.email_opt_out, patient.sms_opt_out) == (False, False)
    assert booking["status"] == "booked"


def test_consent_covers_only_the_channels_given(page, practice, owner):
    _, practitioners, _ = practice
    body = {"firstName": "Ada", "email": "ada@example.com", "marketingConsent": True}
    booked(page["token"], str(practitioners[0].id), slot(0), body)
    assert [c.channel for c in consents(owner.organization)] == ["email"]
    assert DEFAULT_CONSENT_TEXT in consents(owner.organization)[0].evidence


def test_consent_of_a_known_patient_is_recorded_on_that_patient(page, practice, owner):
    _, practitioners, _ = practice
    known = PatientFactory(organization=owner.organization, email="ADA@example.com", sms_opt_out=True)
    booked(page["token"], str(practitioners[0].id), slot(0), PATIENT | {"marketingConsent": True})
    assert {c.patient_id for c in consents(owner.organization)} == {known.id}
    known.refresh_from_db()
    assert known.sms_opt_out is False  # granting SMS consent lifts the opt-out


def test_nothing_is_recorded_without_the_tick(page, practice, owner):
    _, practitioners, _ = practice
    booked(page["token"], str(practitioners[0].id), slot(0))  # not given
    other = {"firstName": "Bea", "email": "bea@example.com", "marketingConsent": False}
    booked(page["token"], str(practitioners[1].id), slot(0), other)
    assert Appointment.objects.for_org(owner.organization).count() == 2
    assert consents(owner.organization) == []


def test_completing_again_records_nothing_more(page, practice, owner):
    _, practitioners, _ = practice
    hold_id = held(page["token"], str(practitioners[0].id), slot(0))["holdId"]
    body = PATIENT | {"marketingConsent": True}
    assert complete(page["token"], hold_id, body).status_code == 201
    assert complete(page["token"], hold_id, body).status_code == 200
    assert len(consents(owner.organization)) == 2


def test_a_consent_flag_that_is_not_a_boolean_is_refused(page, practice, owner):
    _, practitioners, _ = practice
    hold_id = held(page["token"], str(practitioners[0].id), slot(0))["holdId"]
    body = assert_error(
        complete(page["token"], hold_id, PATIENT | {"marketingConsent": "maybe"}), 400, "VALIDATION_ERROR"
    )
    assert "marketingConsent" in body["details"]["fields"]
    assert not Appointment.objects.for_org(owner.organization).exists()
    assert consents(owner.organization) == []


# --- HTML: the details form's checkbox ----------------------------------------------------------------------------


def _hold_key(page_id) -> str:
    return BookingHold.objects.unscoped().get(page_id=page_id).key


def test_the_details_form_shows_the_wording_beside_an_unticked_checkbox(api, page, practice):
    api.patch(f"{PAGES}/{page['id']}", {"consentText": WORDING}, content_type="application/json")
    _, practitioners, _ = practice
    body = text(hold_form(page["token"], practitioners[0], slot(0)))
    assert 'type="checkbox" id="marketingConsent" name="marketingConsent" value="yes">' in body  # not checked
    assert "Yes, send me the clinic&#x27;s newsletter and offers." in body  # escaped, as written


def test_a_ticked_checkbox_records_consent_with_the_wording(api, page, practice, owner):
    api.patch(f"{PAGES}/{page['id']}", {"consentText": WORDING}, content_type="application/json")
    _, practitioners, _ = practice
    hold_form(page["token"], practitioners[0], slot(0))
    response = complete_form(page["token"], _hold_key(page["id"]), phone="+39 333 123 4567", marketingConsent="yes")
    assert response.status_code == 201
    records = consents(owner.organization)
    assert [(c.channel, c.status, c.source) for c in records] == [
        ("email", "granted", "booking_page"),
        ("sms", "granted", "booking_page"),
    ]
    assert all(f"Wording shown: {WORDING}" in c.evidence for c in records)


def test_an_unticked_checkbox_records_nothing(page, practice, owner):
    _, practitioners, _ = practice
    hold_form(page["token"], practitioners[0], slot(0))
    assert complete_form(page["token"], _hold_key(page["id"])).status_code == 201
    hold_form(page["token"], practitioners[1], slot(0))
    key = BookingHold.objects.unscoped().get(page_id=page["id"], practitioner=practitioners[1]).key
    assert complete_form(page["token"], key, email="b@example.com", marketingConsent="no").status_code == 201
    assert Appointment.objects.for_org(owner.organization).count() == 2
    assert consents(owner.organization) == []


def test_a_form_shown_again_keeps_the_tick_and_records_nothing_yet(page, practice, owner):
    _, practitioners, _ = practice
    hold_form(page["token"], practitioners[0], slot(0))
    response = complete_form(page["token"], _hold_key(page["id"]), email="", marketingConsent="yes")
    assert response.status_code == 400
    assert 'name="marketingConsent" value="yes" checked>' in text(response)
    assert consents(owner.organization) == []
    assert not Appointment.objects.for_org(owner.organization).exists()
