"""Patient forms through HTTP: sending by link (front desk) or SMS through the conversations pipeline, the public
page and its JSON and form-post submissions, single use, expiry, revocation, and what a submission creates (a medical
history version from the patient and a PDF in clinical storage)."""

import io
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.utils import timezone
from pypdf import PdfReader

from apps.clinical.public import ClinicalDocument
from apps.conversations.public import Message
from apps.records.models import MedicalHistory, PatientForm
from tests.campaigns.conftest import connect
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint
from tests.records.conftest import post
from tests.records.test_medical_history import ANSWERS

CONSENT = "I consent to the extraction of tooth 48 under local anaesthetic."


def forms_url(patient) -> str:
    return f"/clinical/patients/{patient.id}/forms"


def send(client, patient, **body):
    response = post(client, forms_url(patient), {"kind": "medical_history", "delivery": "link", **body})
    assert response.status_code == 201, response.content
    return response.json()


def path_of(sent) -> str:
    return sent["url"].split("://", 1)[1].split("/", 1)[1].join(["/", ""])


@pytest.fixture
def desk(same_practice):
    return same_practice("front_desk").session_client()


def test_a_link_form_is_filled_by_the_patient_once(desk, patient, dentist, session):
    sent = send(desk, patient)
    assert sent["status"] == "pending" and sent["delivery"] == "link" and sent["questionnaireVersion"] == 1
    path = path_of(sent)
    assert path.startswith("/patient-form/pf_")
    assert not PatientForm.objects.for_org(dentist.organization).filter(token_hash__contains="pf_").exists()

    shown = bearer("nothing").get(path)  # the token is the boundary: no credential, and a stray one is ignored
    assert shown.status_code == 200, shown.content
    assert shown.json()["practiceName"] == dentist.organization.name
    done = post(bearer("nothing"), path, {"answers": ANSWERS})

    assert done.status_code == 200, done.content
    assert done.json() == {"status": "completed"}
    entry = MedicalHistory.objects.for_org(dentist.organization).get()
    assert (entry.source, entry.entered_by_id, entry.patient_id) == ("patient", None, patient.id)
    form = PatientForm.objects.for_org(dentist.organization).get()
    assert form.status == "completed" and form.medical_history_id == entry.id
    document = ClinicalDocument.objects.for_org(dentist.organization).get(id=form.document_id)
    assert (document.category, document.content_type, document.patient_id) == ("form", "application/pdf", patient.id)
    download = session.get(f"/clinical/patients/{patient.id}/documents/{document.id}/download")
    assert download.status_code == 200 and download["Content-Type"] == "application/pdf"
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(b"".join(download.streaming_content))).pages)
    assert "Penicillin" in text  # a real PDF a reader opens, holding the patient's answers
    assert {a["text"] for a in session.get(f"/clinical/patients/{patient.id}/alerts").json()["items"]} == {
        "Allergy: Penicillin",
        "Anticoagulants",
    }
    # Spent: the link opens nothing any more.
    assert_error(desk.get(path), 404, "NOT_FOUND")
    assert_error(post(desk, path, {"answers": ANSWERS}), 404, "NOT_FOUND")
    listed = desk.get(forms_url(patient)).json()["items"]
    assert [f["status"] for f in listed] == ["completed"] and listed[0]["documentId"] == str(document.id)
    assert "url" not in listed[0]


def test_bad_answers_do_not_spend_the_token(desk, patient, dentist):
    path = path_of(send(desk, patient))

    response = post(desk, path, {"answers": ANSWERS | {"smoking": "cigars"}})

    assert "answers.smoking" in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert "colour" in assert_error(post(desk, path, {"colour": 1}), 400, "VALIDATION_ERROR")["details"]["fields"]
    assert PatientForm.objects.for_org(dentist.organization).get().status == "pending"
    assert not MedicalHistory.objects.for_org(dentist.organization).exists()
    assert post(desk, path, {"answers": ANSWERS}).status_code == 200


def test_an_expired_link_opens_nothing(desk, patient, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    sent = send(desk, patient, expiresInHours=1)

    time_machine.shift(timedelta(hours=1, seconds=1))

    assert_error(desk.get(path_of(sent)), 404, "NOT_FOUND")
    assert_error(post(desk, path_of(sent), {"answers": ANSWERS}), 404, "NOT_FOUND")
    assert desk.get(forms_url(patient)).json()["items"][0]["status"] == "expired"


def test_revoking_closes_the_link(desk, patient):
    sent = send(desk, patient)

    revoked = post(desk, f"/clinical/forms/{sent['id']}/revoke")

    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked"
    assert_error(desk.get(path_of(sent)), 404, "NOT_FOUND")
    assert post(desk, f"/clinical/forms/{sent['id']}/revoke").json()["status"] == "revoked"
    other = send(desk, patient)
    assert post(desk, path_of(other), {"answers": ANSWERS}).status_code == 200
    assert_error(post(desk, f"/clinical/forms/{other['id']}/revoke"), 409, "FORM_CLOSED")


def test_a_consent_form_is_agreed_and_stored(desk, patient, dentist):
    missing = post(desk, forms_url(patient), {"kind": "consent", "delivery": "link"})
    assert "consentText" in assert_error(missing, 400, "VALIDATION_ERROR")["details"]["fields"]
    sent = send(desk, patient, kind="consent", title="Extraction consent", consentText=CONSENT)
    path = path_of(sent)
    assert desk.get(path).json()["consentText"] == CONSENT

    refused = post(desk, path, {"agree": False, "signatureName": "Ann Smith"})
    assert "agree" in assert_error(refused, 400, "VALIDATION_ERROR")["details"]["fields"]
    done = post(desk, path, {"agree": True, "signatureName": "Ann Smith"})

    assert done.status_code == 200, done.content
    form = PatientForm.objects.for_org(dentist.organization).get()
    document = ClinicalDocument.objects.for_org(dentist.organization).get(id=form.document_id)
    assert document.category == "consent" and form.medical_history_id is None


def test_a_form_is_sent_by_sms_through_the_conversations_pipeline(desk, patient, same_practice, dentist):
    owner = same_practice("owner")
    connect(owner.api_client(), "sms", "+390212345678", {"accountSid": "AC" + "0" * 32, "authToken": "forms-sms"})

    sent = send(desk, patient, delivery="sms")

    message = Message.objects.for_org(dentist.organization).get(id=sent["messageId"])
    assert sent["url"] in message.body


def test_a_form_that_cannot_be_sent_keeps_nothing(desk, patient, dentist):
    response = post(desk, forms_url(patient), {"kind": "medical_history", "delivery": "email"})

    body = assert_error(response, 409, "FORM_NOT_SENT")
    assert body["details"]["reason"] == "CONNECTION_UNAVAILABLE"
    assert not PatientForm.objects.for_org(dentist.organization).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "letter", "delivery": "link"}, "kind"),
        ({"kind": "consent", "delivery": "pigeon"}, "delivery"),
        ({"kind": "medical_history", "delivery": "link", "expiresInHours": 0}, "expiresInHours"),
        ({"kind": "medical_history", "delivery": "link", "token": "x"}, "token"),
    ],
)
def test_bad_form_input_names_the_field(desk, patient, body, field):
    response = post(desk, forms_url(patient), body)

    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not PatientForm.objects.for_org(patient.organization).exists()


def test_permissions_practices_workspace_and_transport(
    desk, dentist, patient, same_practice, clinical_outsider, member_factory
):
    theirs = PatientFactory(organization=clinical_outsider.organization)
    their_form = send(clinical_outsider.session_client(), theirs)
    raw, _ = mint(dentist, "read write")
    telesales = same_practice("telesales").session_client()
    closed = member_factory(role="front_desk")

    assert_error(telesales.get(forms_url(patient)), 403, "PERMISSION_DENIED")
    assert_error(post(telesales, forms_url(patient), {"kind": "consent", "delivery": "link"}), 403, "PERMISSION_DENIED")
    assert_error(desk.get(forms_url(theirs)), 404, "NOT_FOUND")
    assert_error(post(desk, forms_url(theirs), {"kind": "medical_history", "delivery": "link"}), 404, "NOT_FOUND")
    assert_error(post(desk, f"/clinical/forms/{their_form['id']}/revoke"), 404, "NOT_FOUND")
    for client in (dentist.api_client(), bearer(raw)):
        assert_error(client.get(forms_url(patient)), 403, "transport_not_allowed")
        assert_error(
            post(client, forms_url(patient), {"kind": "consent", "delivery": "link"}), 403, "transport_not_allowed"
        )
    closed_patient = PatientFactory(organization=closed.organization)
    assert_error(closed.session_client().get(forms_url(closed_patient)), 403, "PMS_WORKSPACE_UNAVAILABLE")
    assert PatientForm.objects.for_org(clinical_outsider.organization).get().status == "pending"
    assert not PatientForm.objects.for_org(dentist.organization).exists()


def test_the_page_for_browsers_and_its_form_post(desk, patient, dentist):
    path = path_of(send(desk, patient))
    html = {"HTTP_ACCEPT": "text/html"}

    page = desk.get(path, **html)
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    assert dentist.organization.name in page.content.decode()
    assert "default-src 'none'" in page["Content-Security-Policy"] and page["Cache-Control"] == "no-store"
    fields = {k: ("yes" if v is True else "no" if v is False else v) for k, v in ANSWERS.items()}

    form = "application/x-www-form-urlencoded"
    wrong = desk.post(path + "/page", urlencode(fields | {"smoking": "cigars"}), content_type=form, **html)
    assert wrong.status_code == 400 and "must be one of" in wrong.content.decode()
    done = desk.post(path + "/page", urlencode(fields), content_type=form, **html)
    assert done.status_code == 200 and "Thank you" in done.content.decode()
    assert MedicalHistory.objects.for_org(dentist.organization).get().source == "patient"
    gone = desk.get(path, **html)
    assert gone.status_code == 404 and "not valid" in gone.content.decode()
    assert desk.get("/patient-form/pf_unknown", **html).status_code == 404
    assert_error(desk.get("/patient-form/whatever"), 404, "NOT_FOUND")
