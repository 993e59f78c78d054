"""What a submission does: match a known patient (e-mail any case, phone digits) or create a lead with the form's
defaults, open a journey (mapped treatment, form default, General enquiry; never a second open one on the same
treatment), attribution touches, marketing consent, the timeline entry, events, custom fields, rejection without a
contact; parking before the mapping is confirmed and the replay on confirmation; incoming-calls mode."""

import pytest

from apps.capture.models import AttributionTouch, CaptureSubmission
from apps.events.models import Event
from apps.journeys.models import GENERAL_ENQUIRY, Journey, JourneyStatus
from apps.patients.models import Patient
from tests.capture.conftest import (
    counts,
    form_path,
    form_row,
    json_post,
    make_treatment,
    post_json,
    public_post,
    read_patient,
    signed_post,
    submissions_of,
)
from tests.factories import LeadSourceFactory, LocationFactory, PatientFactory
from tests.helpers import assert_error


def patients(organization):
    return Patient.objects.for_org(organization)


def journeys_of(organization, patient):
    return Journey.objects.for_org(organization).filter(patient_id=patient.id).order_by("created_at", "id")


def events_about(organization, subject_type: str, subject_id, type: str):
    return Event.objects.for_org(organization).filter(subject_type=subject_type, subject_id=str(subject_id), type=type)


# --- matching -----------------------------------------------------------------------------------------------------


def test_existing_patient_is_matched_by_email_in_any_case(owner, create_form):
    known = PatientFactory(organization=owner.organization, email="Maria.Rossi@Example.com", first_name="Maria")
    form = create_form()

    response = public_post(form, {"first_name": "Someone else", "email": "MARIA.ROSSI@example.COM"})

    assert response.status_code == 201
    assert patients(owner.organization).count() == 1
    submission = submissions_of(owner.organization).get()
    assert (submission.patient_id, submission.patient_created) == (known.id, False)
    known.refresh_from_db()
    assert known.first_name == "Maria"  # what the practice has is never overwritten
    assert not events_about(owner.organization, "patient", known.id, "patient.created").exists()


def test_existing_patient_is_matched_by_phone_digits(owner, create_form):
    known = PatientFactory(organization=owner.organization, email="", phone_mobile="0039 3331234567")
    form = create_form()

    response = public_post(form, {"phone": "+39 333-123 4567", "email": "new@example.com"})

    assert response.status_code == 201
    assert patients(owner.organization).count() == 1
    assert submissions_of(owner.organization).get().patient_id == known.id
    known.refresh_from_db()
    assert known.email == "new@example.com"  # a gap the submission fills


def test_a_different_number_is_a_new_lead(owner, create_form):
    PatientFactory(organization=owner.organization, email="", phone_mobile="0039 3331234567")
    form = create_form()
    assert public_post(form, {"phone": "+39 333-123 4568"}).status_code == 201
    assert patients(owner.organization).count() == 2


def test_another_practices_patient_is_never_matched(owner, outsider, create_form):
    PatientFactory(organization=outsider.organization, email="maria@example.com")
    form = create_form()
    assert public_post(form, {"email": "maria@example.com"}).status_code == 201
    assert patients(owner.organization).count() == 1
    assert submissions_of(owner.organization).get().patient_created is True


# --- creating -----------------------------------------------------------------------------------------------------


def test_new_lead_takes_the_forms_lead_source_and_location(owner, api, create_form):
    location = LocationFactory(organization=owner.organization)
    source = LeadSourceFactory(organization=owner.organization)
    form = create_form(locationId=str(location.id), leadSourceId=str(source.id))

    response = public_post(
        form,
        {
            "first_name": "Giulia",
            "last_name": "Bianchi",
            "email": "giulia@example.com",
            "date_of_birth": "1990-04-01",
            "gender": "F",
            "city": "Milano",
            "postcode": "20121",
            "preferred_contact_method": "WhatsApp",
        },
    )

    assert response.status_code == 201
    patient = patients(owner.organization).get()
    assert patient.status == "lead"
    assert (patient.location_id, patient.lead_source_id) == (location.id, source.id)
    assert str(patient.date_of_birth) == "1990-04-01"
    assert (patient.gender, patient.city, patient.postal_code, patient.preferred_contact_method) == (
        "female",
        "Milano",
        "20121",
        "whatsapp",
    )
    detail = api.get(f"/patients/{patient.id}").json()
    assert detail["status"] == "lead"
    assert detail["email"] == "giulia@example.com"
    assert submissions_of(owner.organization).get().patient_created is True


def test_events_are_emitted_for_the_new_patient_and_journey(owner, create_form):
    form = create_form()
    assert public_post(form, {"email": "ev@example.com"}).status_code == 201
    patient = patients(owner.organization).get()
    journey = journeys_of(owner.organization, patient).get()

    assert events_about(owner.organization, "patient", patient.id, "patient.created").count() == 1
    assert events_about(owner.organization, "journey", journey.id, "journey.created").count() == 1


def test_custom_fields_and_a_malformed_email_are_kept(owner, create_form):
    form = create_form()

    response = public_post(
        form,
        {"phone": "3331234567", "email": "not-an-email", "favourite_colour": "blue", "date_of_birth": "2999-01-01"},
    )

    assert response.status_code == 201
    patient = patients(owner.organization).get()
    assert patient.email in ("", None)
    assert patient.phone_mobile == "3331234567"
    assert patient.custom_fields == {
        "email": "not-an-email",
        "favourite_colour": "blue",
        "date_of_birth": "2999-01-01",
    }


def test_structured_value_under_a_default_name_is_kept(owner, create_form):
    form = create_form()
    assert json_post(form, {"phone": "3331234567", "email": {"home": "h@example.com"}}).status_code == 201
    patient = patients(owner.organization).get()
    assert patient.custom_fields == {"email": {"home": "h@example.com"}}


def test_custom_fields_fill_gaps_on_a_known_patient(owner, create_form):
    known = PatientFactory(organization=owner.organization, email="k@example.com", custom_fields={"pet": "dog"})
    form = create_form()
    assert public_post(form, {"email": "k@example.com", "pet": "cat", "size": "L"}).status_code == 201
    known.refresh_from_db()
    assert known.custom_fields == {"pet": "dog", "size": "L"}


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"first_name": "No contact"}, id="neither"),
        pytest.param({"first_name": "Bad", "email": "nope", "phone": "12"}, id="unusable"),
    ],
)
def test_without_a_usable_email_or_phone_no_lead_is_made_but_a_person_sees_it(owner, api, create_form, fields):
    form = create_form()
    before = counts(owner.organization)

    response = public_post(form, fields | {"message": "Please call me back"})

    assert response.status_code == 201  # stored: the sender is told it arrived
    after = counts(owner.organization)
    assert after == before | {"submissions": before["submissions"] + 1, "review_items": 1}
    listed = api.get(form_path(form, "submissions")).json()["items"]
    assert [(item["status"], item["patientId"]) for item in listed] == [("rejected", None)]
    assert listed[0]["problem"] == "no usable e-mail or phone"
    # Not lost: the intake-review queue shows it, with what was typed (name, the unusable contact, the message).
    [item] = api.get("/intake-review").json()["items"]
    assert (item["reasons"], item["patientId"], item["status"]) == (["no_usable_contact"], None, "open")
    assert (item["formId"], item["submissionId"]) == (form["id"], listed[0]["id"])
    assert item["submittedFields"] == fields | {"message": "Please call me back"}
    closed = post_json(api, f"/intake-review/{item['id']}/dismiss", {"note": "called back"})
    assert closed.status_code == 200 and closed.json()["status"] == "dismissed"


def test_telephone_alone_is_the_number_to_reach(owner, create_form):
    form = create_form()
    assert public_post(form, {"telephone": "02 1234 5678"}).status_code == 201
    assert patients(owner.organization).get().phone_mobile == "02 1234 5678"


# --- journeys -----------------------------------------------------------------------------------------------------


def test_journey_opens_on_the_named_treatment(owner, create_form):
    implants = make_treatment(owner.organization, "Implants")
    default = make_treatment(owner.organization, "Whitening")
    form = create_form(defaultTreatmentId=str(default.id))

    assert public_post(form, {"email": "t@example.com", "treatment": "implants"}).status_code == 201

    patient = patients(owner.organization).get()
    journey = journeys_of(owner.organization, patient).get()
    assert journey.treatment_id == implants.id
    assert journey.status == JourneyStatus.OPEN
    assert journey.source == "capture_form"
    assert submissions_of(owner.organization).get().journey_id == journey.id


def test_journey_opens_on_the_forms_default_treatment(owner, create_form):
    default = make_treatment(owner.organization, "Whitening")
    form = create_form(defaultTreatmentId=str(default.id))
    assert public_post(form, {"email": "t@example.com", "treatment": "Unknown thing"}).status_code == 201
    patient = patients(owner.organization).get()
    assert journeys_of(owner.organization, patient).get().treatment_id == default.id


def test_journey_opens_on_general_enquiry_without_a_treatment(owner, create_form):
    form = create_form()
    assert public_post(form, {"email": "t@example.com"}).status_code == 201
    patient = patients(owner.organization).get()
    journey = journeys_of(owner.organization, patient).get()
    assert journey.treatment.name == GENERAL_ENQUIRY
    assert journey.treatment.is_builtin


def test_a_second_submission_does_not_open_a_second_journey_on_the_same_treatment(owner, create_form):
    implants = make_treatment(owner.organization, "Implants")
    make_treatment(owner.organization, "Whitening")
    form = create_form()

    assert public_post(form, {"email": "t@example.com", "treatment": "Implants"}).status_code == 201
    assert public_post(form, {"email": "T@example.com", "treatment": "Implants"}).status_code == 201
    patient = patients(owner.organization).get()
    assert journeys_of(owner.organization, patient).count() == 1
    # Another treatment is another journey.
    assert public_post(form, {"email": "t@example.com", "treatment": "Whitening"}).status_code == 201
    assert [j.treatment.name for j in journeys_of(owner.organization, patient)] == ["Implants", "Whitening"]
    first, second, _ = submissions_of(owner.organization)
    assert first.journey_id == second.journey_id
    assert journeys_of(owner.organization, patient).first().treatment_id == implants.id


def test_an_inactive_named_treatment_falls_back_to_general_enquiry(owner, create_form):
    make_treatment(owner.organization, "Veneers", active=False)
    form = create_form()
    assert public_post(form, {"email": "t@example.com", "treatment": "Veneers"}).status_code == 201
    patient = patients(owner.organization).get()
    assert journeys_of(owner.organization, patient).get().treatment.name == GENERAL_ENQUIRY


# --- attribution, consent, timeline ---------------------------------------------------------------------------


def test_attribution_touch_is_visible_on_the_patient(owner, api, create_form):
    form = create_form()
    fields = {
        "email": "a@example.com",
        "utm_source": "google",
        "utm_medium": "cpc",
        "utm_campaign": "implants-2025",
        "utm_term": "dental implants",
        "utm_content": "ad-7",
        "utm_id": "42",
        "fbclid": "FB-1",
        "landing_url": "https://smile.example/implants?utm_source=google",
        "referrer": "https://www.google.com/",
    }

    assert public_post(form, fields).status_code == 201

    patient = patients(owner.organization).get()
    touches = read_patient(api, patient.id, "touches")["touches"]
    submission = submissions_of(owner.organization).get()
    assert len(touches) == 1
    touch = touches[0]
    assert touch == touch | {
        "formId": form["id"],
        "submissionId": str(submission.id),
        "utmSource": "google",
        "utmMedium": "cpc",
        "utmCampaign": "implants-2025",
        "utmTerm": "dental implants",
        "utmContent": "ad-7",
        "utmId": "42",
        "clickIdType": "fbclid",
        "clickId": "FB-1",
        "landingUrl": "https://smile.example/implants?utm_source=google",
        "referrer": "https://www.google.com/",
    }
    assert touch["occurredAt"]
    # Marketing parameters are not custom fields.
    assert patient.custom_fields == {}


@pytest.mark.parametrize("click_id", ["gclid", "msclkid", "ttclid"])
def test_click_ids_are_recognised(owner, api, create_form, click_id):
    form = create_form()
    assert json_post(form, {"email": "c@example.com", click_id: "CLICK"}).status_code == 201
    touch = read_patient(api, patients(owner.organization).get().id, "touches")["touches"][0]
    assert (touch["clickIdType"], touch["clickId"]) == (click_id, "CLICK")


def test_every_capture_adds_a_touch_newest_first(owner, api, create_form):
    form = create_form()
    assert public_post(form, {"email": "c@example.com", "utm_source": "first"}).status_code == 201
    assert public_post(form, {"email": "c@example.com", "utm_source": "second"}).status_code == 201
    touches = read_patient(api, patients(owner.organization).get().id, "touches")["touches"]
    assert [touch["utmSource"] for touch in touches] == ["second", "first"]


def test_marketing_consent_is_recorded(owner, api, create_form):
    form = create_form()
    assert (
        public_post(form, {"email": "m@example.com", "phone": "3331234567", "marketing_consent": "yes"}).status_code
        == 201
    )

    patient = patients(owner.organization).get()
    current = read_patient(api, patient.id, "marketing")["marketing"]["current"]
    assert sorted((c["channel"], c["status"], c["source"]) for c in current) == [
        ("email", "granted", "capture_form"),
        ("sms", "granted", "capture_form"),
    ]
    assert all(form["id"] in c["evidence"] for c in current)


@pytest.mark.parametrize("value", ["no", "", "0"])
def test_no_consent_without_a_yes(owner, api, create_form, value):
    form = create_form()
    assert public_post(form, {"email": "m@example.com", "marketing_consent": value}).status_code == 201
    patient = patients(owner.organization).get()
    assert read_patient(api, patient.id, "marketing")["marketing"]["current"] == []


def test_message_lands_on_the_timeline(owner, api, create_form):
    form = create_form(name="Implant landing page")

    assert (
        public_post(
            form, {"email": "t@example.com", "message": "I'd like an implant", "additional_information": "Mornings"}
        ).status_code
        == 201
    )

    patient = patients(owner.organization).get()
    timeline = read_patient(api, patient.id, "timeline")["timeline"]["items"]
    captured = [entry for entry in timeline if entry["kind"] == "captured"]
    assert len(captured) == 1
    assert captured[0]["summary"] == "I'd like an implant\n\nMornings"
    submission = submissions_of(owner.organization).get()
    assert captured[0]["data"] == {
        "formId": form["id"],
        "formName": "Implant landing page",
        "kind": "form_submissions",
        "submissionId": str(submission.id),
    }


# --- parking and replay ----------------------------------------------------------------------------------------


def test_submissions_before_confirmation_are_parked(owner, api, create_form):
    form = create_form(confirmMapping=False)

    first = public_post(form, {"nome": "Giulia", "correo": "giulia@example.com", "utm_source": "fb"})
    second = json_post(form, {"nome": "Paolo", "correo": "paolo@example.com", "email": "p@example.com"})

    assert first.status_code == second.status_code == 201
    assert patients(owner.organization).count() == 0
    assert Journey.objects.for_org(owner.organization).count() == 0
    assert set(submissions_of(owner.organization).values_list("status", flat=True)) == {"parked"}
    read = api.get(form_path(form)).json()
    assert read["parkedSubmissions"] == 2
    assert read["unmappedFields"] == ["correo", "nome"]
    assert read["mappingConfirmedAt"] is None
    listed = api.get("/settings/capture-forms").json()["items"][0]
    assert (listed["parkedSubmissions"], listed["unmappedFields"]) == (2, ["correo", "nome"])


def test_confirming_the_mapping_replays_parked_submissions(owner, api, create_form, django_capture_on_commit_callbacks):
    form = create_form(confirmMapping=False)
    assert public_post(form, {"nome": "Giulia", "correo": "giulia@example.com", "colore": "blu"}).status_code == 201
    assert public_post(form, {"nome": "Paolo", "correo": "paolo@example.com"}).status_code == 201

    with django_capture_on_commit_callbacks(execute=True):
        response = post_json(
            api,
            form_path(form, "mapping/confirm"),
            {"fieldMapping": {"nome": "first_name", "correo": "email", "colore": "custom:colour"}},
        )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["replaying"] == 2
    assert body["form"]["mappingConfirmedAt"] is not None
    assert body["form"]["fieldMapping"] == {"nome": "first_name", "correo": "email", "colore": "custom:colour"}
    leads = {p.email: p for p in patients(owner.organization)}
    assert set(leads) == {"giulia@example.com", "paolo@example.com"}
    assert leads["giulia@example.com"].first_name == "Giulia"
    assert leads["giulia@example.com"].custom_fields == {"colour": "blu"}
    assert leads["paolo@example.com"].first_name == "Paolo"
    assert set(submissions_of(owner.organization).values_list("status", flat=True)) == {"processed"}
    read = api.get(form_path(form)).json()
    assert (read["parkedSubmissions"], read["unmappedFields"]) == (0, [])
    # New posts are processed at once now.
    assert public_post(form, {"nome": "Sara", "correo": "sara@example.com"}).status_code == 201
    assert patients(owner.organization).filter(first_name="Sara", email="sara@example.com").exists()


def test_confirming_without_a_mapping_keeps_the_current_one(
    owner, api, django_capture_on_commit_callbacks, create_form
):
    form = create_form(confirmMapping=False, fieldMapping={"mail": "email"})
    assert public_post(form, {"mail": "x@example.com"}).status_code == 201

    with django_capture_on_commit_callbacks(execute=True):
        response = post_json(api, form_path(form, "mapping/confirm"), {})

    assert response.status_code == 200, response.content
    assert response.json()["replaying"] == 1
    assert response.json()["form"]["fieldMapping"] == {"mail": "email"}
    assert patients(owner.organization).get().email == "x@example.com"


def test_a_bad_mapping_confirms_nothing(owner, api, create_form, django_capture_on_commit_callbacks):
    form = create_form(confirmMapping=False)
    assert public_post(form, {"nome": "Giulia", "correo": "g@example.com"}).status_code == 201
    before = counts(owner.organization)

    with django_capture_on_commit_callbacks(execute=True):
        response = post_json(api, form_path(form, "mapping/confirm"), {"fieldMapping": {"nome": "nickname"}})
        unknown = post_json(api, form_path(form, "mapping/confirm"), {"mapping": {}})

    assert_error(response, 400, "VALIDATION_ERROR")
    assert_error(unknown, 400, "VALIDATION_ERROR")
    assert counts(owner.organization) == before
    assert form_row(form).mapping_confirmed_at is None
    assert submissions_of(owner.organization).get().status == CaptureSubmission.Status.PARKED


def test_signed_posts_are_parked_too(owner, api, create_form, django_capture_on_commit_callbacks):
    form = create_form(deliveryMode="signed", confirmMapping=False)
    assert signed_post(form, {"tel": "3331234567"}, secret=form["signingSecret"], delivery_id="p-1").status_code == 201
    assert submissions_of(owner.organization).get().status == "parked"
    with django_capture_on_commit_callbacks(execute=True):
        assert post_json(api, form_path(form, "mapping/confirm"), {"fieldMapping": {"tel": "phone"}}).status_code == 200
    assert patients(owner.organization).get().phone_mobile == "3331234567"


# --- incoming calls --------------------------------------------------------------------------------------------


@pytest.fixture
def calls_form(create_form):
    return create_form(name="Call tracking", kind="incoming_calls")


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"first_name": "Caller", "email": "caller@example.com"}, id="email-only"),
        pytest.param({"first_name": "Caller"}, id="nothing"),
        pytest.param({"phone": "12"}, id="unusable-number"),
    ],
)
def test_incoming_call_without_a_phone_is_400(owner, calls_form, fields):
    before = counts(owner.organization)

    response = public_post(calls_form, fields)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert "phone" in body["details"]["fields"]
    assert counts(owner.organization) == before


def test_incoming_call_creates_a_lead_by_number_names_optional(owner, calls_form):
    response = public_post(calls_form, {"phone": "+39 02 1234 5678"})

    assert response.status_code == 201, response.content
    patient = patients(owner.organization).get()
    assert patient.phone_mobile == "+39 02 1234 5678"
    assert patient.status == "lead"
    journey = journeys_of(owner.organization, patient).get()
    assert journey.treatment.name == GENERAL_ENQUIRY
    assert journey.source == "incoming_call"


def test_incoming_call_matches_by_number_and_stays_on_the_open_journey(owner, calls_form, create_form):
    implants = make_treatment(owner.organization, "Implants")
    website = create_form(name="Website")
    assert public_post(website, {"phone": "0039 333 1234567", "treatment": "Implants"}).status_code == 201
    patient = patients(owner.organization).get()
    journey = journeys_of(owner.organization, patient).get()
    assert journey.treatment_id == implants.id

    response = public_post(calls_form, {"phone": "+39 333-123-4567"})

    assert response.status_code == 201
    assert patients(owner.organization).count() == 1
    assert journeys_of(owner.organization, patient).count() == 1
    assert submissions_of(owner.organization, calls_form).get().journey_id == journey.id


def test_incoming_call_without_an_open_journey_opens_one_on_the_default(owner, create_form):
    default = make_treatment(owner.organization, "Orthodontics")
    form = create_form(kind="incoming_calls", defaultTreatmentId=str(default.id))
    known = PatientFactory(organization=owner.organization, phone_mobile="3331234567")

    assert public_post(form, {"phone": "333 123 4567", "first_name": "Ignored"}).status_code == 201

    journey = journeys_of(owner.organization, known).get()
    assert journey.treatment_id == default.id
    assert patients(owner.organization).count() == 1


def test_incoming_call_matches_by_number_not_email(owner, calls_form):
    PatientFactory(organization=owner.organization, email="shared@example.com", phone_mobile="3330000000")
    response = public_post(calls_form, {"phone": "3339999999", "email": "shared@example.com"})
    assert response.status_code == 201
    assert patients(owner.organization).count() == 2
    assert patients(owner.organization).filter(phone_mobile="3339999999").exists()


def test_parked_incoming_call_without_a_phone_is_rejected_on_replay(
    owner, api, create_form, django_capture_on_commit_callbacks
):
    form = create_form(kind="incoming_calls", confirmMapping=False)
    assert public_post(form, {"tel": "3331234567"}).status_code == 201
    assert public_post(form, {"email": "nophone@example.com"}).status_code == 201

    with django_capture_on_commit_callbacks(execute=True):
        assert post_json(api, form_path(form, "mapping/confirm"), {"fieldMapping": {"tel": "phone"}}).status_code == 200

    assert list(patients(owner.organization).values_list("phone_mobile", flat=True)) == ["3331234567"]
    statuses = sorted(submissions_of(owner.organization).values_list("status", flat=True))
    assert statuses == ["processed", "rejected"]
    [item] = api.get("/intake-review").json()["items"]
    assert (item["reasons"], item["submittedFields"]) == (["no_usable_contact"], {"email": "nophone@example.com"})


def test_touch_rows_belong_to_the_practice(owner, create_form):
    form = create_form()
    assert public_post(form, {"email": "a@example.com", "utm_source": "x"}).status_code == 201
    touch = AttributionTouch.objects.for_org(owner.organization).get()
    assert touch.organization_id == owner.organization.id
    assert touch.form_id == form_row(form).id
