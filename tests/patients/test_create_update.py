"""Patients: create (POST /patients), read one (GET /patients/{id} with embed), update (PATCH /patients/{id}),
the patient.created / patient.updated events, tenancy of every per-patient route, and permissions per role."""

import json
import uuid
from datetime import date, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.events.models import Event
from apps.patients.models import Activity, Patient, PatientTag
from tests.factories import (
    LeadSourceFactory,
    LocationFactory,
    PatientFactory,
    PractitionerFactory,
    PriceListFactory,
    TagFactory,
)
from tests.helpers import assert_error

PATIENTS = "/patients"

# Every field of the create/update payload in the spec, plus what a stored record reports.
PAYLOAD_FIELDS = {
    "locationId",
    "title",
    "firstName",
    "lastName",
    "preferredName",
    "ethnicityCode",
    "dateOfBirth",
    "gender",
    "fiscalCode",
    "stsOpposition",
    "email",
    "phoneMobile",
    "phoneOther",
    "addressLine1",
    "addressLine2",
    "city",
    "province",
    "postalCode",
    "country",
    "language",
    "preferredContactMethod",
    "preferredContactTime",
    "smsOptOut",
    "emailOptOut",
    "whatsappOptOut",
    "leadSourceId",
    "referredByPatientId",
    "medicalAlert",
    "note",
    "defaultPriceListId",
    "dentistPractitionerId",
    "hygienistPractitionerId",
    "customFields",
}
PATIENT_FIELDS = PAYLOAD_FIELDS | {
    "id",
    "status",
    "archivedAt",
    "mergedIntoPatientId",
    "contactAttempts",
    "tags",
    "createdAt",
    "updatedAt",
}
EMBEDS = ("timeline", "journeys", "touches", "pms", "deposits", "referral", "marketing")
SETTABLE_STATUSES = ("enquiry", "lead", "patient", "inactive", "deceased")
ROLES = ("owner", "manager", "front_desk", "telesales", "analyst", "dentist", "hygienist", "nurse")
CRM_READERS = {"owner", "manager", "front_desk", "telesales", "analyst"}
CRM_WRITERS = {"owner", "manager", "front_desk", "telesales"}

# Nullable payload fields (the spec: "Nullable fields accept null to clear") with a value to set first.
RELATED_FIELDS = (
    "locationId",
    "leadSourceId",
    "referredByPatientId",
    "defaultPriceListId",
    "dentistPractitionerId",
    "hygienistPractitionerId",
)
NULLABLE_TEXT = {
    "title": "Dott.",
    "preferredName": "Mimmo",
    "ethnicityCode": "EU-IT",
    "dateOfBirth": "1980-01-01",
    "gender": "male",
    "fiscalCode": "RSSMRA80A01H501U",
    "phoneOther": "+39 02 1234567",
    "addressLine1": "via Roma 10",
    "addressLine2": "scala B",
    "city": "Milano",
    "province": "MI",
    "postalCode": "20121",
    "country": "IT",
    "language": "it",
    "preferredContactMethod": "sms",
    "preferredContactTime": "mornings",
    "medicalAlert": "penicillin allergy",
    "note": "prefers the Tuesday hygienist",
}


# --- helpers ---------------------------------------------------------------------------------------------------


def assert_invalid(response, field: str) -> dict:
    """400 VALIDATION_ERROR whose details.fields names `field` (camelCase) with at least one message."""
    body = assert_error(response, 400, "VALIDATION_ERROR")
    fields = body["details"].get("fields")
    assert isinstance(fields, dict), body
    assert field in fields, body
    assert fields[field], body
    return body


def post_json(client: Client, path: str, data, **extra):
    return client.post(path, data, content_type="application/json", **extra)


def patch_json(client: Client, path: str, data, **extra):
    return client.patch(path, data, content_type="application/json", **extra)


def valid_body(**overrides) -> dict:
    body = {"firstName": "Mario", "lastName": "Rossi", "email": "mario.rossi@example.com"}
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not ...}


def db_state() -> dict:
    """Everything a refusal must leave alone: every patient row, tag link, timeline entry and event."""
    return {
        "patients": list(Patient.objects.unscoped().order_by("id").values()),
        "activities": list(Activity.objects.unscoped().order_by("id").values_list("id", "patient_id", "kind")),
        "events": list(Event.objects.unscoped().order_by("id").values_list("id", "type", "subject_id")),
    }


def patient_row(patient_id) -> dict:
    return Patient.objects.unscoped().filter(id=patient_id).values().get()


def events_of(organization, patient_id, type_: str) -> list[Event]:
    return list(
        Event.objects.for_org(organization).filter(type=type_, subject_id=str(patient_id)).order_by("created_at")
    )


def merge(client: Client, survivor_id, duplicate_id):
    response = post_json(client, f"{PATIENTS}/{survivor_id}/merge", {"duplicatePatientId": str(duplicate_id)})
    assert response.status_code == 200, response.content
    return response


@pytest.fixture
def org(owner):
    return owner.organization


@pytest.fixture
def related(org, outsider):
    """One record of each related kind in the owner's practice and one in the outsider's."""
    other = outsider.organization
    return {
        "own": {
            "locationId": LocationFactory(organization=org),
            "leadSourceId": LeadSourceFactory(organization=org),
            "referredByPatientId": PatientFactory(organization=org),
            "defaultPriceListId": PriceListFactory(organization=org),
            "dentistPractitionerId": PractitionerFactory(organization=org, kind="dentist"),
            "hygienistPractitionerId": PractitionerFactory(organization=org, kind="hygienist"),
        },
        "foreign": {
            "locationId": LocationFactory(organization=other),
            "leadSourceId": LeadSourceFactory(organization=other),
            "referredByPatientId": PatientFactory(organization=other),
            "defaultPriceListId": PriceListFactory(organization=other),
            "dentistPractitionerId": PractitionerFactory(organization=other, kind="dentist"),
            "hygienistPractitionerId": PractitionerFactory(organization=other, kind="hygienist"),
        },
    }


# --- POST /patients: success -------------------------------------------------------------------------------------


def test_create_returns_201_with_the_full_patient_shape(api, org):
    custom = {
        "shoe_size": 42,
        "favouriteColour": "blue",
        "UPPER_case": "Y",
        "Nested_Key": {"inner_key": [1, {"deepKey": True}], "MixedCase": "x"},
    }
    body = valid_body(phoneMobile="+39 333 1234567", customFields=custom, title="Dott.", dateOfBirth="1980-01-01")

    response = post_json(api, PATIENTS, body)

    assert response.status_code == 201, response.content
    data = response.json()
    assert set(data) == PATIENT_FIELDS
    uuid.UUID(data["id"])
    assert data["firstName"] == "Mario"
    assert data["lastName"] == "Rossi"
    assert data["email"] == "mario.rossi@example.com"
    assert data["phoneMobile"] == "+39 333 1234567"
    assert data["title"] == "Dott."
    assert data["dateOfBirth"] == "1980-01-01"
    assert data["status"] == "lead"
    assert data["customFields"] == custom
    assert data["tags"] == []
    assert data["archivedAt"] is None
    assert data["mergedIntoPatientId"] is None
    assert data["contactAttempts"] == 0
    assert data["stsOpposition"] is False
    assert data["smsOptOut"] is False and data["emailOptOut"] is False and data["whatsappOptOut"] is False
    for name in RELATED_FIELDS:
        assert data[name] is None
    for name in ("preferredName", "gender", "fiscalCode", "city", "note", "medicalAlert", "phoneOther"):
        assert data[name] is None
    assert data["createdAt"] and data["updatedAt"]

    row = Patient.objects.for_org(org).get(id=data["id"])
    assert row.first_name == "Mario"
    assert row.email == "mario.rossi@example.com"
    assert row.status == "lead"
    assert row.custom_fields == custom
    assert row.date_of_birth == date(1980, 1, 1)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(None, id="null"),
        pytest.param([1, "two", None, {"three": 3}], id="list-with-null"),
        pytest.param(1.5, id="float"),
        pytest.param(False, id="false"),
        pytest.param("", id="empty-string"),
        pytest.param({"a": {"b": {"c": None}}}, id="deep-object"),
    ],
)
def test_create_keeps_any_json_value_in_custom_fields(api, org, value):
    custom = {"some_Key": value}

    response = post_json(api, PATIENTS, valid_body(customFields=custom))

    assert response.status_code == 201, response.content
    assert response.json()["customFields"] == custom
    assert Patient.objects.for_org(org).get(id=response.json()["id"]).custom_fields == custom


@pytest.mark.parametrize("custom", [{"note": "a\u0000b"}, {"note": "\ud800"}, {"k\u0000": 1}, {"deep": ["\udfff"]}])
def test_custom_fields_postgresql_cannot_store_are_400_not_500(api, org, custom):
    raw = json.dumps(valid_body(customFields=custom))  # the JSON escapes as a client would send them
    response = api.post(PATIENTS, raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "customFields" in response.json()["details"]["fields"]
    assert not Patient.objects.for_org(org).exists()


def test_create_stores_every_payload_field(api, org, related):
    own = related["own"]
    body = {
        **NULLABLE_TEXT,
        "firstName": "Mario",
        "lastName": "Rossi",
        "email": "mario.rossi@example.com",
        "phoneMobile": "+39 333 1234567",
        "stsOpposition": True,
        "smsOptOut": True,
        "emailOptOut": True,
        "whatsappOptOut": True,
        "customFields": {"vip": True},
        **{name: str(record.id) for name, record in own.items()},
    }

    response = post_json(api, PATIENTS, body)

    assert response.status_code == 201, response.content
    data = response.json()
    for name, value in body.items():
        assert data[name] == value, name
    row = Patient.objects.for_org(org).get(id=data["id"])
    assert row.location_id == own["locationId"].id
    assert row.lead_source_id == own["leadSourceId"].id
    assert row.referred_by_patient_id == own["referredByPatientId"].id
    assert row.default_price_list_id == own["defaultPriceListId"].id
    assert row.dentist_practitioner_id == own["dentistPractitionerId"].id
    assert row.hygienist_practitioner_id == own["hygienistPractitionerId"].id
    assert row.sts_opposition is True and row.sms_opt_out is True
    assert row.email_opt_out is True and row.whatsapp_opt_out is True
    assert row.gender == "male" and row.preferred_contact_method == "sms"


@pytest.mark.parametrize(
    "contact",
    [
        pytest.param({"email": "only@example.com"}, id="email-only"),
        pytest.param({"email": ..., "phoneMobile": "+39 333 0000001"}, id="phone-only"),
        pytest.param({"phoneMobile": "+39 333 0000001"}, id="both"),
    ],
)
def test_create_needs_only_one_of_email_or_phone(api, org, contact):
    response = post_json(api, PATIENTS, valid_body(**contact))

    assert response.status_code == 201, response.content
    assert Patient.objects.for_org(org).filter(id=response.json()["id"]).exists()


@pytest.mark.parametrize(
    "field, value",
    [
        pytest.param("dateOfBirth", "2024-02-29", id="leap-day-in-a-leap-year"),
        pytest.param("dateOfBirth", "1900-01-01", id="old-date"),
        pytest.param("dateOfBirth", None, id="dob-null"),
        pytest.param("title", "x" * 40, id="title-40"),
        pytest.param("ethnicityCode", "x" * 16, id="ethnicity-16"),
        pytest.param("gender", "unknown", id="gender-unknown"),
        pytest.param("preferredContactMethod", "whatsapp", id="contact-whatsapp"),
        pytest.param("customFields", {}, id="custom-empty"),
        pytest.param("lastName", "", id="last-name-empty"),
        pytest.param("firstName", "M", id="first-name-one-char"),
    ],
)
def test_create_accepts_boundary_values(api, org, field, value):
    response = post_json(api, PATIENTS, valid_body(**{field: value}))

    assert response.status_code == 201, response.content
    assert response.json()[field] == value


def test_create_accepts_today_as_date_of_birth(api):
    today = timezone.localdate().isoformat()

    response = post_json(api, PATIENTS, valid_body(dateOfBirth=today))

    assert response.status_code == 201, response.content
    assert response.json()["dateOfBirth"] == today


def test_create_records_one_patient_created_event_without_personal_data(api, owner, org):
    body = valid_body(phoneMobile="+39 333 1234567", fiscalCode="RSSMRA80A01H501U", note="anxious")

    response = post_json(api, PATIENTS, body)

    assert response.status_code == 201, response.content
    patient_id = response.json()["id"]
    events = list(Event.objects.for_org(org).filter(subject_id=patient_id))
    assert len(events) == 1
    event = events[0]
    assert event.type == "patient.created"
    assert event.subject_type == "patient"
    assert event.actor_type == "user"
    assert event.actor_id == str(owner.user.id)
    assert event.data["status"] == "lead"
    dumped = json.dumps(event.data).lower()
    for personal in ("mario", "rossi", "example.com", "3331234567", "+39", "rssmra80a01h501u", "anxious"):
        assert personal not in dumped, event.data
    for key in ("email", "firstName", "lastName", "phoneMobile", "name", "fiscalCode", "note"):
        assert key not in event.data
    assert Activity.objects.for_org(org).filter(patient_id=patient_id, kind="created").count() == 1


# --- POST /patients: refusals --------------------------------------------------------------------------------------

TOMORROW = "tomorrow"

INVALID_CREATE = [
    pytest.param({"firstName": ...}, "firstName", id="first-name-missing"),
    pytest.param({"firstName": ""}, "firstName", id="first-name-empty"),
    pytest.param({"firstName": None}, "firstName", id="first-name-null"),
    pytest.param({"email": ...}, "email", id="neither-email-nor-phone"),
    pytest.param({"email": None, "phoneMobile": None}, "email", id="both-contacts-null"),
    pytest.param({"email": "", "phoneMobile": ""}, "email", id="both-contacts-empty"),
    pytest.param({"email": "not-an-email"}, "email", id="email-format"),
    pytest.param({"email": "mario@"}, "email", id="email-no-domain"),
    pytest.param({"title": "x" * 41}, "title", id="title-41"),
    pytest.param({"ethnicityCode": "x" * 17}, "ethnicityCode", id="ethnicity-17"),
    pytest.param({"dateOfBirth": "2023-02-29"}, "dateOfBirth", id="dob-feb-29-non-leap"),
    pytest.param({"dateOfBirth": "2023-13-01"}, "dateOfBirth", id="dob-month-13"),
    pytest.param({"dateOfBirth": "2023-04-31"}, "dateOfBirth", id="dob-april-31"),
    pytest.param({"dateOfBirth": "01/02/2020"}, "dateOfBirth", id="dob-slashes"),
    pytest.param({"dateOfBirth": "2020-01-01T00:00:00Z"}, "dateOfBirth", id="dob-datetime"),
    pytest.param({"dateOfBirth": TOMORROW}, "dateOfBirth", id="dob-future"),
    pytest.param({"gender": "robot"}, "gender", id="gender-enum"),
    pytest.param({"gender": "Male"}, "gender", id="gender-case"),
    pytest.param({"preferredContactMethod": "pigeon"}, "preferredContactMethod", id="contact-method-enum"),
    pytest.param({"customFields": "not an object"}, "customFields", id="custom-fields-string"),
    pytest.param({"customFields": [1, 2]}, "customFields", id="custom-fields-list"),
    pytest.param({"customFields": None}, "customFields", id="custom-fields-null"),
    pytest.param({"smsOptOut": "perhaps"}, "smsOptOut", id="boolean"),
    pytest.param({"favouriteFood": "pizza"}, "favouriteFood", id="unknown-key"),
    pytest.param({"status": "patient"}, "status", id="status-on-create"),
    pytest.param({"locationId": "not-a-uuid"}, "locationId", id="location-malformed"),
    pytest.param({"leadSourceId": "123"}, "leadSourceId", id="lead-source-malformed"),
    pytest.param({"referredByPatientId": 7}, "referredByPatientId", id="referrer-number"),
    pytest.param(
        {"defaultPriceListId": "7d444840-9dc0-01c6-a2b5-3e5c4f3e9a1b"}, "defaultPriceListId", id="price-list-version-0"
    ),
    pytest.param({"dentistPractitionerId": str(uuid.uuid4())}, "dentistPractitionerId", id="dentist-unknown"),
    pytest.param({"hygienistPractitionerId": ""}, "hygienistPractitionerId", id="hygienist-empty"),
]


@pytest.mark.parametrize("changes, field", INVALID_CREATE)
def test_create_refuses_invalid_fields_and_creates_nothing(api, org, changes, field):
    if changes.get("dateOfBirth") == TOMORROW:
        changes = {"dateOfBirth": (timezone.localdate() + timedelta(days=1)).isoformat()}
    before = db_state()

    response = post_json(api, PATIENTS, valid_body(**changes))

    assert_invalid(response, field)
    assert db_state() == before


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("[]", id="empty-list"),
        pytest.param('[{"firstName": "Mario", "email": "m@example.com"}]', id="list-of-patient"),
        pytest.param('"Mario"', id="string"),
        pytest.param("42", id="number"),
        pytest.param("null", id="null"),
    ],
)
def test_create_refuses_a_body_that_is_not_an_object(api, raw):
    before = db_state()

    response = api.post(PATIENTS, raw, content_type="application/json")

    assert_error(response, 400, "VALIDATION_ERROR")
    assert db_state() == before


@pytest.mark.parametrize("raw", ["{", "", "{'firstName': 'Mario'}", '{"firstName": NaN}'])
def test_create_refuses_malformed_json(api, raw):
    before = db_state()

    response = api.post(PATIENTS, raw, content_type="application/json")

    assert_error(response, 400, "VALIDATION_ERROR")
    assert db_state() == before


def test_create_names_every_invalid_field(api):
    response = post_json(api, PATIENTS, {"firstName": "", "email": "nope", "title": "x" * 41, "gender": "robot"})

    body = assert_invalid(response, "firstName")
    assert {"firstName", "email", "title", "gender"} <= set(body["details"]["fields"])


@pytest.mark.parametrize("field", RELATED_FIELDS)
def test_create_stores_a_related_record_of_the_same_practice(api, org, related, field):
    record = related["own"][field]

    response = post_json(api, PATIENTS, valid_body(**{field: str(record.id)}))

    assert response.status_code == 201, response.content
    assert response.json()[field] == str(record.id)
    row = patient_row(response.json()["id"])
    assert row[_column(field)] == record.id


@pytest.mark.parametrize("field", RELATED_FIELDS)
def test_create_refuses_a_related_record_of_another_practice(api, related, field):
    record = related["foreign"][field]
    before = db_state()

    response = post_json(api, PATIENTS, valid_body(**{field: str(record.id)}))

    body = assert_invalid(response, field)
    assert str(record.id) not in json.dumps(body["details"])
    assert db_state() == before


def _column(field: str) -> str:
    return {
        "locationId": "location_id",
        "leadSourceId": "lead_source_id",
        "referredByPatientId": "referred_by_patient_id",
        "defaultPriceListId": "default_price_list_id",
        "dentistPractitionerId": "dentist_practitioner_id",
        "hygienistPractitionerId": "hygienist_practitioner_id",
    }[field]


# --- PATCH /patients/{id} ----------------------------------------------------------------------------------------


@pytest.fixture
def patient(api, org):
    """A patient created through the API (so it has its 'created' timeline entry and event)."""
    response = post_json(
        api,
        PATIENTS,
        valid_body(phoneMobile="+39 333 1234567", city="Milano", customFields={"vip": False}),
    )
    assert response.status_code == 201, response.content
    return Patient.objects.for_org(org).get(id=response.json()["id"])


def test_patch_changes_only_the_fields_sent(api, patient):
    before = api.get(f"{PATIENTS}/{patient.id}").json()

    response = patch_json(api, f"{PATIENTS}/{patient.id}", {"lastName": "Bianchi", "city": "Roma"})

    assert response.status_code == 200, response.content
    data = response.json()
    assert set(data) == PATIENT_FIELDS
    assert data["lastName"] == "Bianchi"
    assert data["city"] == "Roma"
    for name in PATIENT_FIELDS - {"lastName", "city", "updatedAt"}:
        assert data[name] == before[name], name
    row = patient_row(patient.id)
    assert row["last_name"] == "Bianchi" and row["city"] == "Roma"
    assert row["first_name"] == "Mario" and row["email"] == "mario.rossi@example.com"


def test_patch_reads_the_patient_row_once_and_renders_the_update(api, org, patient):
    """PATCH /patients/{id} reads the row once (the 404 check and the lock, SELECT ... FOR UPDATE) and renders the
    service's result, tags included, as a GET would show it afterwards."""
    for name in ("zeta", "Alpha"):
        PatientTag.objects.create(organization=org, patient=patient, tag=TagFactory(organization=org, name=name))

    with CaptureQueriesContext(connection) as captured:
        response = patch_json(api, f"{PATIENTS}/{patient.id}", {"lastName": "Bianchi", "status": "patient"})

    assert response.status_code == 200, response.content
    row_reads = [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith("SELECT")
        and 'FROM "patients_patient"' in q["sql"]
        and (str(patient.id) in q["sql"] or patient.id.hex in q["sql"])
    ]
    assert len(row_reads) == 1, row_reads
    assert "FOR UPDATE" in row_reads[0]
    assert response.json() == api.get(f"{PATIENTS}/{patient.id}").json()
    assert [tag["name"] for tag in response.json()["tags"]] == ["Alpha", "zeta"]


def test_patch_with_an_empty_object_changes_nothing(api, org, patient):
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{patient.id}", {})

    assert response.status_code == 200, response.content
    assert response.json()["id"] == str(patient.id)
    assert db_state() == before


def test_patch_sets_and_then_clears_every_nullable_field_with_null(api, org, patient, related):
    own = related["own"]
    values = {**NULLABLE_TEXT, **{name: str(record.id) for name, record in own.items()}}

    set_response = patch_json(api, f"{PATIENTS}/{patient.id}", values)

    assert set_response.status_code == 200, set_response.content
    for name, value in values.items():
        assert set_response.json()[name] == value, name

    cleared = patch_json(api, f"{PATIENTS}/{patient.id}", dict.fromkeys(values))

    assert cleared.status_code == 200, cleared.content
    for name in values:
        assert cleared.json()[name] is None, name
    row = patient_row(patient.id)
    for column in (
        "title",
        "preferred_name",
        "ethnicity_code",
        "date_of_birth",
        "gender",
        "fiscal_code",
        "phone_other",
        "address_line1",
        "address_line2",
        "city",
        "province",
        "postal_code",
        "country",
        "language",
        "preferred_contact_method",
        "preferred_contact_time",
        "medical_alert",
        "note",
        *(_column(name) for name in RELATED_FIELDS),
    ):
        assert row[column] is None, column
    assert row["first_name"] == "Mario"


@pytest.mark.parametrize("field, keep", [("email", "phoneMobile"), ("phoneMobile", "email")])
def test_patch_may_clear_one_contact_while_the_other_remains(api, patient, field, keep):
    response = patch_json(api, f"{PATIENTS}/{patient.id}", {field: None})

    assert response.status_code == 200, response.content
    assert response.json()[field] is None
    assert response.json()[keep]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"email": None, "phoneMobile": None}, id="both-in-one-patch"),
        pytest.param({"email": None, "phoneMobile": ""}, id="null-and-empty"),
    ],
)
def test_patch_refuses_clearing_both_email_and_phone(api, patient, body):
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{patient.id}", body)

    assert_invalid(response, "email")
    assert db_state() == before


def test_patch_refuses_clearing_the_last_remaining_contact(api, org, patient):
    assert patch_json(api, f"{PATIENTS}/{patient.id}", {"phoneMobile": None}).status_code == 200
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{patient.id}", {"email": None})

    assert_invalid(response, "email")
    assert db_state() == before


@pytest.mark.parametrize("status", SETTABLE_STATUSES)
def test_patch_sets_each_settable_status(api, org, status):
    patient = PatientFactory(organization=org, status="enquiry" if status != "enquiry" else "lead")

    response = patch_json(api, f"{PATIENTS}/{patient.id}", {"status": status})

    assert response.status_code == 200, response.content
    assert response.json()["status"] == status
    assert patient_row(patient.id)["status"] == status
    events = events_of(org, patient.id, "patient.updated")
    assert len(events) == 1
    assert events[0].data["action"] == "updated"
    assert events[0].data["changedFields"] == ["status"]


@pytest.mark.parametrize(
    "body, field",
    [
        pytest.param({"status": "archived"}, "status", id="status-archived"),
        pytest.param({"status": "customer"}, "status", id="status-unknown"),
        pytest.param({"status": None}, "status", id="status-null"),
        pytest.param({"firstName": ""}, "firstName", id="first-name-empty"),
        pytest.param({"firstName": None}, "firstName", id="first-name-null"),
        pytest.param({"email": "nope"}, "email", id="email-format"),
        pytest.param({"title": "x" * 41}, "title", id="title-41"),
        pytest.param({"ethnicityCode": "x" * 17}, "ethnicityCode", id="ethnicity-17"),
        pytest.param({"dateOfBirth": "2023-02-29"}, "dateOfBirth", id="dob-non-leap"),
        pytest.param({"dateOfBirth": "2999-01-01"}, "dateOfBirth", id="dob-future"),
        pytest.param({"gender": "robot"}, "gender", id="gender"),
        pytest.param({"preferredContactMethod": "fax"}, "preferredContactMethod", id="contact-method"),
        pytest.param({"customFields": "x"}, "customFields", id="custom-fields"),
        pytest.param({"mergedIntoPatientId": str(uuid.uuid4())}, "mergedIntoPatientId", id="read-only-field"),
        pytest.param({"contactAttempts": 9}, "contactAttempts", id="contact-attempts-read-only"),
        pytest.param({"archivedAt": None}, "archivedAt", id="archived-at-read-only"),
        pytest.param({"favouriteFood": "pizza"}, "favouriteFood", id="unknown-key"),
        pytest.param({"locationId": "nope"}, "locationId", id="location-malformed"),
    ],
)
def test_patch_refuses_invalid_fields_and_changes_nothing(api, patient, body, field):
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{patient.id}", body)

    assert_invalid(response, field)
    assert db_state() == before


def test_patch_refuses_a_body_that_is_not_an_object(api, patient):
    before = db_state()

    response = api.patch(f"{PATIENTS}/{patient.id}", '[{"lastName": "Bianchi"}]', content_type="application/json")

    assert_error(response, 400, "VALIDATION_ERROR")
    assert db_state() == before


@pytest.mark.parametrize("field", RELATED_FIELDS)
def test_patch_refuses_a_related_record_of_another_practice(api, patient, related, field):
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{patient.id}", {field: str(related["foreign"][field].id)})

    assert_invalid(response, field)
    assert db_state() == before


def test_patch_refuses_a_patient_referring_themselves(api, patient):
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{patient.id}", {"referredByPatientId": str(patient.id)})

    assert_invalid(response, "referredByPatientId")
    assert db_state() == before


def test_patch_records_patient_updated_with_exactly_the_changed_fields(api, org, patient, related):
    location = related["own"]["locationId"]
    body = {
        "lastName": "Rossi",  # unchanged
        "city": "Milano",  # unchanged
        "firstName": "Marco",
        "dateOfBirth": "1980-05-17",
        "smsOptOut": True,
        "locationId": str(location.id),
        "customFields": {"vip": True},
        "addressLine1": "via Roma 10",
    }

    response = patch_json(api, f"{PATIENTS}/{patient.id}", body)

    assert response.status_code == 200, response.content
    events = events_of(org, patient.id, "patient.updated")
    assert len(events) == 1
    event = events[0]
    assert event.data["action"] == "updated"
    assert sorted(event.data["changedFields"]) == sorted(
        ["firstName", "dateOfBirth", "smsOptOut", "locationId", "customFields", "addressLine1"]
    )
    assert event.subject_type == "patient"
    dumped = json.dumps(event.data).lower()
    for personal in ("marco", "rossi", "milano", "via roma", "1980-05-17", "example.com"):
        assert personal not in dumped


def test_patch_clearing_a_field_lists_it_as_changed(api, org, patient):
    response = patch_json(api, f"{PATIENTS}/{patient.id}", {"city": None, "phoneMobile": None})

    assert response.status_code == 200, response.content
    [event] = events_of(org, patient.id, "patient.updated")
    assert sorted(event.data["changedFields"]) == ["city", "phoneMobile"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"lastName": "Rossi", "city": "Milano"}, id="same-values"),
        pytest.param({"email": "mario.rossi@example.com", "status": "lead"}, id="same-email-and-status"),
        pytest.param({"customFields": {"vip": False}}, id="same-custom-fields"),
        pytest.param({"title": None, "locationId": None}, id="null-already-null"),
        pytest.param({}, id="empty"),
    ],
)
def test_patch_that_changes_nothing_records_no_event(api, org, patient, body):
    before_events = list(Event.objects.for_org(org).values_list("id", flat=True))

    response = patch_json(api, f"{PATIENTS}/{patient.id}", body)

    assert response.status_code == 200, response.content
    assert list(Event.objects.for_org(org).values_list("id", flat=True)) == before_events
    assert events_of(org, patient.id, "patient.updated") == []


def test_patch_of_a_merged_patient_is_409_patient_merged(api, org):
    survivor = PatientFactory(organization=org)
    duplicate = PatientFactory(organization=org)
    merge(api, survivor.id, duplicate.id)
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{duplicate.id}", {"lastName": "Changed"})

    body = assert_error(response, 409, "PATIENT_MERGED")
    assert body["details"] == {"mergedIntoPatientId": str(survivor.id)}
    assert db_state() == before


def test_status_change_of_a_merged_patient_is_409_patient_merged(api, org):
    survivor = PatientFactory(organization=org)
    duplicate = PatientFactory(organization=org)
    merge(api, survivor.id, duplicate.id)
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{duplicate.id}", {"status": "patient"})

    body = assert_error(response, 409, "PATIENT_MERGED")
    assert body["details"] == {"mergedIntoPatientId": str(survivor.id)}
    assert db_state() == before


def test_status_change_of_an_archived_patient_is_409_patient_archived(api, org, patient):
    archived = post_json(api, f"{PATIENTS}/{patient.id}/archive", {"reason": "moved abroad"})
    assert archived.status_code == 200, archived.content
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{patient.id}", {"status": "patient"})

    assert_error(response, 409, "PATIENT_ARCHIVED")
    assert db_state() == before
    assert patient_row(patient.id)["status"] == "archived"


def test_patch_of_an_unknown_patient_is_404(api, org):
    before = db_state()

    response = patch_json(api, f"{PATIENTS}/{uuid.uuid4()}", {"lastName": "X"})

    assert_error(response, 404, "NOT_FOUND")
    assert db_state() == before


# --- GET /patients/{id} -----------------------------------------------------------------------------------------


def test_get_returns_the_patient_detail_without_embeds(api, org, patient):
    tag = TagFactory(organization=org, name="VIP")
    PatientTag.objects.create(organization=org, patient=patient, tag=tag)

    response = api.get(f"{PATIENTS}/{patient.id}")

    assert response.status_code == 200, response.content
    data = response.json()
    assert set(data) == PATIENT_FIELDS
    assert data["id"] == str(patient.id)
    assert data["firstName"] == "Mario"
    assert data["customFields"] == {"vip": False}
    assert [t["id"] for t in data["tags"]] == [str(tag.id)]
    assert data["tags"][0]["name"] == "VIP"


def test_detail_value_row_renders_exactly_what_the_serializer_renders(api, org, patient, outsider):
    """GET /patients/{id} without embeds renders from .values() (apps.patients.renderers.patient_row);
    PatientDetailSerializer (the schema) over the model instance gives the same bytes: every nullable column null,
    then every column set (nested custom fields with snake_case keys kept verbatim, tags in name order, a whole-second
    timestamp, an archived and merged record); another practice's id is the same 404 as an unknown one."""
    from datetime import UTC, datetime

    from apps.core.renderers import CamelCaseJSONRenderer
    from apps.patients.api.serializers import PatientDetailSerializer
    from apps.patients.selectors import patient_get

    def same_bytes(record):
        response = api.get(f"{PATIENTS}/{record.id}")
        assert response.status_code == 200, response.content
        expected = PatientDetailSerializer(
            patient_get(organization=org, patient_id=record.id), context={"embedded": {}}
        ).data
        assert response.content == CamelCaseJSONRenderer().render(expected)

    bare = PatientFactory(organization=org, email=None, phone_mobile=None, custom_fields={})
    Patient.objects.for_org(org).filter(id=bare.id).update(
        **{name: None for name in ("title", "preferred_name", "date_of_birth", "gender", "city", "language")}
    )
    same_bytes(bare)

    survivor = PatientFactory(organization=org)
    for name in ("zeta", "Alpha", "beta"):
        PatientTag.objects.create(organization=org, patient=patient, tag=TagFactory(organization=org, name=name))
    Patient.objects.for_org(org).filter(id=patient.id).update(
        title="Dott.",
        preferred_name="Bea",
        date_of_birth=date(1984, 2, 29),
        city="Milano",
        custom_fields={"policy_number": "P1", "nested_key": {"keep_me": [1, None, "x_y"]}, "vip": True},
        archived_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
        merged_into=survivor,
        created_at=datetime(2024, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        contact_attempts=4,
        sms_opt_out=True,
    )
    same_bytes(patient)

    theirs = PatientFactory(organization=outsider.organization)
    assert_error(api.get(f"{PATIENTS}/{theirs.id}"), 404, "NOT_FOUND")
    assert api.get(f"{PATIENTS}/{theirs.id}").content == api.get(f"{PATIENTS}/{uuid.uuid4()}").content


def test_get_embed_timeline_folds_in_the_first_timeline_page(api, owner, patient):
    response = api.get(f"{PATIENTS}/{patient.id}", {"embed": "timeline"})

    assert response.status_code == 200, response.content
    data = response.json()
    assert set(data) == PATIENT_FIELDS | {"timeline"}
    timeline = data["timeline"]
    assert set(timeline) == {"items", "nextCursor"}
    assert timeline["nextCursor"] is None
    kinds = [item["kind"] for item in timeline["items"]]
    assert kinds == ["created"]
    assert timeline["items"][0]["actorUserId"] == str(owner.user.id)


def test_get_embed_timeline_shows_newest_first(api, patient):
    assert patch_json(api, f"{PATIENTS}/{patient.id}", {"status": "patient"}).status_code == 200

    response = api.get(f"{PATIENTS}/{patient.id}", {"embed": "timeline"})

    assert response.status_code == 200, response.content
    assert [item["kind"] for item in response.json()["timeline"]["items"]] == ["status_changed", "created"]


def test_get_embed_of_every_area_for_a_new_patient(api, patient):
    response = api.get(f"{PATIENTS}/{patient.id}", {"embed": "journeys,touches,deposits,pms,referral"})

    assert response.status_code == 200, response.content
    data = response.json()
    assert set(data) == PATIENT_FIELDS | {"journeys", "touches", "deposits", "pms", "referral"}
    assert data["journeys"] == []
    assert data["touches"] == []
    assert data["deposits"] == []
    assert data["pms"] == {"link": None, "links": []}  # apps.pms: not linked to a PMS patient
    assert data["referral"] == {"advocacies": [], "rewards": [], "referredBy": None}  # apps.referrals


def test_get_embed_marketing(api, org, patient):
    consent = post_json(
        api,
        f"{PATIENTS}/{patient.id}/marketing-consent",
        {"channel": "email", "status": "withdrawn", "source": "phone"},
    )
    assert consent.status_code == 201, consent.content

    response = api.get(f"{PATIENTS}/{patient.id}", {"embed": "marketing"})

    assert response.status_code == 200, response.content
    data = response.json()
    assert set(data) == PATIENT_FIELDS | {"marketing"}
    marketing = data["marketing"]
    assert set(marketing) == {"current", "smsOptOut", "emailOptOut", "whatsappOptOut"}
    assert marketing["emailOptOut"] is True
    assert marketing["smsOptOut"] is False and marketing["whatsappOptOut"] is False
    assert [(c["channel"], c["status"]) for c in marketing["current"]] == [("email", "withdrawn")]


def test_get_embed_marketing_without_consents(api, patient):
    response = api.get(f"{PATIENTS}/{patient.id}", {"embed": "marketing"})

    assert response.status_code == 200, response.content
    assert response.json()["marketing"] == {
        "current": [],
        "smsOptOut": False,
        "emailOptOut": False,
        "whatsappOptOut": False,
    }


def test_get_embed_everything_at_once(api, patient):
    response = api.get(f"{PATIENTS}/{patient.id}", {"embed": ",".join(EMBEDS)})

    assert response.status_code == 200, response.content
    assert set(response.json()) == PATIENT_FIELDS | set(EMBEDS)


@pytest.mark.parametrize("embed", ["timeline", "journeys", "pms", "marketing"])
def test_get_only_the_requested_embed_keys_appear(api, patient, embed):
    response = api.get(f"{PATIENTS}/{patient.id}", {"embed": embed})

    assert response.status_code == 200, response.content
    assert set(response.json()) - PATIENT_FIELDS == {embed}


@pytest.mark.parametrize("embed", ["bogus", "timeline,bogus", "tags", "Timeline", ""])
def test_get_refuses_an_unknown_embed(api, patient, embed):
    response = api.get(f"{PATIENTS}/{patient.id}", {"embed": embed})

    assert_invalid(response, "embed")


def test_get_refuses_an_unknown_query_parameter(api, patient):
    response = api.get(f"{PATIENTS}/{patient.id}", {"expand": "timeline"})

    assert_invalid(response, "expand")


def test_get_a_merged_patient_reports_the_survivor(api, org):
    survivor = PatientFactory(organization=org)
    duplicate = PatientFactory(organization=org)
    merge(api, survivor.id, duplicate.id)

    response = api.get(f"{PATIENTS}/{duplicate.id}")

    assert response.status_code == 200, response.content
    assert response.json()["mergedIntoPatientId"] == str(survivor.id)
    assert api.get(f"{PATIENTS}/{survivor.id}").json()["mergedIntoPatientId"] is None


def test_get_an_unknown_patient_is_404(api):
    assert_error(api.get(f"{PATIENTS}/{uuid.uuid4()}"), 404, "NOT_FOUND")


# --- path ids --------------------------------------------------------------------------------------------------

# The spec names the path parameter of /patients/{id} "id" ("Path: id uuid"), and the routes follow it.
PATH_PARAM = "id"
BAD_IDS = ["nope", "123", "7d444840-9dc0-01c6-a2b5-3e5c4f3e9a1b", "7d4448409dc041c6a2b53e5c4f3e9a1b"]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize(
    "method, suffix, body",
    [
        ("get", "", None),
        ("patch", "", {"lastName": "X"}),
        ("delete", "", None),
        ("post", "/archive", {"reason": "x"}),
        ("post", "/unarchive", {}),
        ("post", "/merge", {"duplicatePatientId": str(uuid.uuid4())}),
        ("post", "/contact-attempts", {"channel": "phone", "outcome": "no_answer"}),
        ("post", "/notes", {"body": "Called, will ring back"}),
        ("get", "/timeline", None),
        ("get", "/marketing-consent", None),
    ],
)
def test_bad_path_uuid_is_400_naming_the_path_parameter(api, org, bad, method, suffix, body):
    PatientFactory(organization=org)
    before = db_state()
    path = f"{PATIENTS}/{bad}{suffix}"

    if body is None:
        response = getattr(api, method)(path)
    else:
        response = getattr(api, method)(path, body, content_type="application/json")

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["details"] == {"fields": {PATH_PARAM: ["must be a UUID"]}}
    assert body["message"].startswith(f"{PATH_PARAM}:")
    assert db_state() == before


# --- tenancy ---------------------------------------------------------------------------------------------------

TENANT_ROUTES = [
    pytest.param("get", "", None, id="get"),
    pytest.param("get", "?embed=timeline,journeys,marketing", None, id="get-embed"),
    pytest.param("patch", "", {"lastName": "Hacked", "status": "patient"}, id="patch"),
    pytest.param("delete", "", None, id="delete"),
    pytest.param("post", "/archive", {"reason": "not yours"}, id="archive"),
    pytest.param("post", "/unarchive", {}, id="unarchive"),
    pytest.param("post", "/contact-attempts", {"channel": "phone", "outcome": "no_answer"}, id="contact-attempts"),
    pytest.param("post", "/notes", {"body": "Not yours"}, id="notes"),
    pytest.param("get", "/timeline", None, id="timeline"),
    pytest.param("get", "/marketing-consent", None, id="marketing-consent-get"),
    pytest.param(
        "post",
        "/marketing-consent",
        {"channel": "sms", "status": "withdrawn", "source": "phone"},
        id="marketing-consent-post",
    ),
]


@pytest.mark.parametrize("archived", [False, True], ids=["active", "archived"])
@pytest.mark.parametrize("method, suffix, body", TENANT_ROUTES)
def test_another_practice_gets_404_on_every_patient_route(api, org, outsider, method, suffix, body, archived):
    patient = post_json(api, PATIENTS, valid_body(phoneMobile="+39 333 1234567")).json()
    if archived:
        assert post_json(api, f"{PATIENTS}/{patient['id']}/archive", {"reason": "x"}).status_code == 200
    before = db_state()
    client = outsider.api_client()
    path = f"{PATIENTS}/{patient['id']}{suffix}"

    if body is None:
        response = getattr(client, method)(path)
    else:
        response = getattr(client, method)(path, body, content_type="application/json")

    body = assert_error(response, 404, "NOT_FOUND")
    assert "Mario" not in json.dumps(body)
    assert db_state() == before


def test_another_practice_cannot_merge_either_way(api, org, outsider):
    mine = PatientFactory(organization=org)
    theirs = PatientFactory(organization=outsider.organization)
    before = db_state()
    client = outsider.api_client()

    into_mine = post_json(client, f"{PATIENTS}/{mine.id}/merge", {"duplicatePatientId": str(theirs.id)})
    swallow_mine = post_json(client, f"{PATIENTS}/{theirs.id}/merge", {"duplicatePatientId": str(mine.id)})
    owner_swallows_theirs = post_json(api, f"{PATIENTS}/{mine.id}/merge", {"duplicatePatientId": str(theirs.id)})

    assert_error(into_mine, 404, "NOT_FOUND")
    assert_error(swallow_mine, 404, "NOT_FOUND")
    assert_error(owner_swallows_theirs, 404, "NOT_FOUND")
    assert db_state() == before


def test_another_practice_cannot_name_my_patient_as_referrer(api, org, outsider):
    mine = PatientFactory(organization=org)
    theirs = PatientFactory(organization=outsider.organization)
    before = db_state()

    response = patch_json(outsider.api_client(), f"{PATIENTS}/{theirs.id}", {"referredByPatientId": str(mine.id)})

    assert_invalid(response, "referredByPatientId")
    assert db_state() == before


# --- permissions per role ----------------------------------------------------------------------------------------


@pytest.fixture
def colleague(owner, member_factory):
    def make(role: str):
        return member_factory(role=role, organization=owner.organization)

    return make


def assert_forbidden(response) -> None:
    assert_error(response, 403, "PERMISSION_DENIED")


@pytest.mark.parametrize("role", ROLES)
def test_list_permission_by_role(colleague, org, role):
    PatientFactory(organization=org)
    member = colleague(role)

    response = member.api_client().get(PATIENTS)

    if role in CRM_READERS:
        assert response.status_code == 200, response.content
        assert response.json()["total"] == 1
    else:
        assert_forbidden(response)


@pytest.mark.parametrize("role", ROLES)
def test_read_one_permission_by_role(colleague, org, role):
    patient = PatientFactory(organization=org)
    member = colleague(role)

    response = member.api_client().get(f"{PATIENTS}/{patient.id}")

    if role in CRM_READERS:
        assert response.status_code == 200, response.content
        assert response.json()["id"] == str(patient.id)
    else:
        assert_forbidden(response)
        assert "firstName" not in response.json()


@pytest.mark.parametrize("role", ROLES)
def test_create_permission_by_role(colleague, org, role):
    member = colleague(role)
    before = db_state()

    response = post_json(member.api_client(), PATIENTS, valid_body())

    if role in CRM_WRITERS:
        assert response.status_code == 201, response.content
        assert Patient.objects.for_org(org).filter(id=response.json()["id"]).exists()
        [event] = events_of(org, response.json()["id"], "patient.created")
        assert event.actor_id == str(member.user.id)
    else:
        assert_forbidden(response)
        assert db_state() == before


@pytest.mark.parametrize("role", ROLES)
def test_update_permission_by_role(colleague, org, role):
    patient = PatientFactory(organization=org, last_name="Rossi")
    member = colleague(role)
    before = db_state()

    response = patch_json(member.api_client(), f"{PATIENTS}/{patient.id}", {"lastName": "Bianchi"})

    if role in CRM_WRITERS:
        assert response.status_code == 200, response.content
        assert patient_row(patient.id)["last_name"] == "Bianchi"
    else:
        assert_forbidden(response)
        assert db_state() == before


@pytest.mark.parametrize("role", ROLES)
def test_erase_is_for_the_owner_only(colleague, org, role):
    patient = PatientFactory(organization=org)
    member = colleague(role)
    before = db_state()

    response = member.api_client().delete(f"{PATIENTS}/{patient.id}")

    if role == "owner":
        assert response.status_code == 200, response.content
        assert response.json() == {"ok": True, "recordingsScheduled": 0}
        assert not Patient.objects.unscoped().filter(id=patient.id).exists()
    else:
        assert_forbidden(response)
        assert db_state() == before


def test_permission_is_checked_before_validation(colleague, org):
    member = colleague("analyst")
    before = db_state()

    response = post_json(member.api_client(), PATIENTS, {"favouriteFood": "pizza"})

    assert_forbidden(response)
    assert db_state() == before


def test_front_desk_session_client_can_create_and_update(colleague, org):
    member = colleague("front_desk")
    client = member.session_client()

    created = post_json(client, PATIENTS, valid_body())
    assert created.status_code == 201, created.content
    updated = patch_json(client, f"{PATIENTS}/{created.json()['id']}", {"status": "patient"})

    assert updated.status_code == 200, updated.content
    assert patient_row(created.json()["id"])["status"] == "patient"
