"""Medical history through HTTP: the default questionnaire, versions of questionnaires, a patient's answers as
versions checked against the questionnaire, alerts derived from answers and manual alerts, and the patient record."""

import pytest

from apps.records.models import MedicalAlert, MedicalHistory, QuestionnaireVersion
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint
from tests.records.conftest import post, put

QUESTIONNAIRES = "/clinical/medical-history/questionnaires"
ANSWERS = {
    "medications": True,
    "medicationsList": "Warfarin 5 mg",
    "allergies": "Penicillin",
    "anticoagulants": True,
    "bisphosphonates": False,
    "heartCondition": False,
    "endocarditisRisk": False,
    "highBloodPressure": False,
    "diabetes": False,
    "bleedingDisorder": False,
    "asthma": False,
    "epilepsy": False,
    "smoking": "former",
}


def history_url(patient) -> str:
    return f"/clinical/patients/{patient.id}/medical-history"


def alerts_url(patient) -> str:
    return f"/clinical/patients/{patient.id}/alerts"


def test_the_default_questionnaire_is_created_on_first_read(session, dentist):
    first = session.get(QUESTIONNAIRES)
    again = session.get(QUESTIONNAIRES)

    assert first.status_code == 200, first.content
    (questionnaire,) = first.json()["items"]
    assert again.json() == first.json()
    keys = {q["key"] for q in questionnaire["questions"]}
    assert {
        "medications",
        "allergies",
        "anticoagulants",
        "bisphosphonates",
        "heartCondition",
        "diabetes",
        "pregnant",
        "smoking",
    } <= keys
    assert questionnaire["isDefault"] and questionnaire["version"] == 1


def test_editing_publishes_a_new_version_and_keeps_the_old(session, dentist, patient):
    questionnaire = session.get(QUESTIONNAIRES).json()["items"][0]
    old = post(session, history_url(patient), {"answers": ANSWERS})
    assert old.status_code == 201, old.content
    questions = questionnaire["questions"] + [
        {"key": "lastDentalVisit", "label": "When did you last see a dentist?", "type": "date", "required": True}
    ]

    response = put(session, f"{QUESTIONNAIRES}/{questionnaire['id']}", {"questions": questions, "name": "Health check"})

    assert response.status_code == 200, response.content
    assert response.json()["version"] == 2 and response.json()["name"] == "Health check"
    v1 = session.get(f"{QUESTIONNAIRES}/{questionnaire['id']}/versions/1").json()
    assert v1["questions"] == questionnaire["questions"]
    assert_error(session.get(f"{QUESTIONNAIRES}/{questionnaire['id']}/versions/3"), 404, "NOT_FOUND")
    # New answers use version 2 (the new question is required); the old answers still point at version 1.
    missing = post(session, history_url(patient), {"answers": ANSWERS})
    assert "answers.lastDentalVisit" in assert_error(missing, 400, "VALIDATION_ERROR")["details"]["fields"]
    new = post(session, history_url(patient), {"answers": ANSWERS | {"lastDentalVisit": "2025-03-01"}}).json()
    assert (new["version"], new["questionnaireVersion"]) == (2, 2)
    listed = session.get(history_url(patient)).json()["items"]
    assert [(h["version"], h["questionnaireVersion"]) for h in listed] == [(2, 2), (1, 1)]
    assert QuestionnaireVersion.objects.for_org(dentist.organization).count() == 2


@pytest.mark.parametrize(
    ("questions", "field"),
    [
        ([], "questions"),
        ([{"key": "Bad key", "label": "x", "type": "text"}], "questions[0].key"),
        ([{"key": "a", "label": "x", "type": "colour"}], "questions[0].type"),
        ([{"key": "a", "label": "x", "type": "choice", "choices": ["one"]}], "questions[0].choices"),
        ([{"key": "a", "label": "x", "type": "text"}, {"key": "a", "label": "y", "type": "text"}], "questions[1].key"),
    ],
)
def test_bad_questions_are_refused(session, questions, field):
    questionnaire = session.get(QUESTIONNAIRES).json()["items"][0]

    response = put(session, f"{QUESTIONNAIRES}/{questionnaire['id']}", {"questions": questions})

    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert session.get(f"{QUESTIONNAIRES}/{questionnaire['id']}").json()["version"] == 1


def test_another_questionnaire_can_be_created(session):
    response = post(
        session,
        QUESTIONNAIRES,
        {
            "name": "Sedation",
            "questions": [
                {"key": "fasted", "label": "Have you fasted?", "type": "boolean", "required": True, "alert": True}
            ],
        },
    )

    assert response.status_code == 201, response.content
    assert [q["name"] for q in session.get(QUESTIONNAIRES).json()["items"]] == ["Medical history", "Sedation"]


@pytest.mark.parametrize(
    ("answers", "field"),
    [
        ({k: v for k, v in ANSWERS.items() if k != "diabetes"}, "answers.diabetes"),
        (ANSWERS | {"diabetes": "yes"}, "answers.diabetes"),
        (ANSWERS | {"smoking": "sometimes"}, "answers.smoking"),
        (ANSWERS | {"alcoholUnitsPerWeek": "many"}, "answers.alcoholUnitsPerWeek"),
        (ANSWERS | {"shoeSize": 42}, "answers.shoeSize"),
    ],
)
def test_answers_are_checked_against_the_questionnaire(session, patient, answers, field):
    response = post(session, history_url(patient), {"answers": answers})

    assert field in assert_error(response, 400, "VALIDATION_ERROR")["details"]["fields"]
    assert not MedicalHistory.objects.for_org(patient.organization).exists()


def test_answers_raise_alerts_and_a_new_version_derives_them_again(session, dentist, patient):
    first = post(session, history_url(patient), {"answers": ANSWERS})
    assert first.status_code == 201, first.content
    assert first.json()["source"] == "staff" and first.json()["enteredById"] == str(dentist.user.id)

    alerts = session.get(alerts_url(patient)).json()["items"]
    assert sorted(a["text"] for a in alerts) == ["Allergy: Penicillin", "Anticoagulants"]
    post(session, history_url(patient), {"answers": ANSWERS | {"anticoagulants": False, "allergies": ""}})
    assert session.get(alerts_url(patient)).json()["items"] == []
    every = session.get(alerts_url(patient), {"includeResolved": "true"}).json()["items"]
    assert len(every) == 2 and all(a["resolvedAt"] for a in every)


def test_manual_alerts_are_added_and_resolved(session, patient, dentist):
    created = post(session, alerts_url(patient), {"text": "Latex allergy"})
    assert created.status_code == 201, created.content
    alert = created.json()
    assert alert["source"] == "manual" and alert["resolvedAt"] is None

    resolved = post(session, f"/clinical/alerts/{alert['id']}/resolve")
    again = post(session, f"/clinical/alerts/{alert['id']}/resolve")

    assert resolved.status_code == 200 and resolved.json()["resolvedById"] == str(dentist.user.id)
    assert again.json() == resolved.json()
    assert session.get(alerts_url(patient)).json()["items"] == []
    assert (
        "text"
        in assert_error(post(session, alerts_url(patient), {"text": ""}), 400, "VALIDATION_ERROR")["details"]["fields"]
    )
    assert_error(session.get(alerts_url(patient), {"includeResolved": "maybe"}), 400, "VALIDATION_ERROR")


def test_the_patient_record_shows_history_and_alerts(session, patient):
    post(session, history_url(patient), {"answers": ANSWERS})
    post(session, alerts_url(patient), {"text": "Anxious patient"})
    post(session, f"/clinical/patients/{patient.id}/notes", {"text": "First visit."})

    record = session.get(f"/patient-record/{patient.id}")

    assert record.status_code == 200, record.content
    body = record.json()
    text = str(body)
    assert "First visit." in text and "Anxious patient" in text and "Penicillin" in text


def test_permissions_practices_workspace_and_transport(
    session, dentist, patient, same_practice, clinical_outsider, member_factory
):
    front_desk = same_practice("front_desk").session_client()
    theirs = PatientFactory(organization=clinical_outsider.organization)
    their_alert = post(clinical_outsider.session_client(), alerts_url(theirs), {"text": "Theirs"}).json()
    raw, _ = mint(dentist, "read write")
    closed = member_factory(role="dentist")

    assert_error(front_desk.get(history_url(patient)), 403, "PERMISSION_DENIED")
    assert_error(front_desk.get(QUESTIONNAIRES), 403, "PERMISSION_DENIED")
    assert_error(
        post(same_practice("owner").session_client(), alerts_url(patient), {"text": "x"}), 403, "PERMISSION_DENIED"
    )
    assert_error(session.get(history_url(theirs)), 404, "NOT_FOUND")
    assert_error(post(session, history_url(theirs), {"answers": ANSWERS}), 404, "NOT_FOUND")
    assert_error(post(session, alerts_url(theirs), {"text": "x"}), 404, "NOT_FOUND")
    assert_error(post(session, f"/clinical/alerts/{their_alert['id']}/resolve"), 404, "NOT_FOUND")
    their_questionnaire = clinical_outsider.session_client().get(QUESTIONNAIRES).json()["items"][0]
    assert_error(session.get(f"{QUESTIONNAIRES}/{their_questionnaire['id']}"), 404, "NOT_FOUND")
    body = {"answers": ANSWERS, "questionnaireId": their_questionnaire["id"]}
    assert (
        "questionnaireId"
        in assert_error(post(session, history_url(patient), body), 400, "VALIDATION_ERROR")["details"]["fields"]
    )
    assert MedicalAlert.objects.for_org(clinical_outsider.organization).get().resolved_at is None
    for client in (dentist.api_client(), bearer(raw)):
        assert_error(client.get(QUESTIONNAIRES), 403, "transport_not_allowed")
        assert_error(post(client, history_url(patient), {"answers": ANSWERS}), 403, "transport_not_allowed")
        assert_error(client.get(alerts_url(patient)), 403, "transport_not_allowed")
    assert_error(closed.session_client().get(QUESTIONNAIRES), 403, "PMS_WORKSPACE_UNAVAILABLE")
    assert not MedicalHistory.objects.for_org(dentist.organization).exists()
