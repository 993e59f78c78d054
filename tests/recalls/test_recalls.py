"""/clinical/patients/{id}/recalls, /clinical/recalls, /clinical/recalls/{id}, …/book, …/cancel, and the next recall
set when an appointment of the recall's type completes."""

from datetime import date, timedelta

from apps.recalls.models import Recall, RecallStatus
from apps.recalls.selectors import RecallQuery, recall_rows
from apps.recalls.tasks import appointment_completed
from tests.factories import PatientFactory, PractitionerFactory
from tests.helpers import assert_error
from tests.recalls.conftest import NOW, book, post, recall_types, set_recall


def test_setting_a_recall_makes_one_then_moves_it(client, patient, practitioner, clock):
    hygiene = recall_types(client)["Hygiene"]

    response = post(
        client,
        f"/clinical/patients/{patient.id}/recalls",
        {"recallTypeId": hygiene, "dueDate": "2026-09-01", "practitionerId": str(practitioner.id)},
    )
    assert response.status_code == 201, response.content
    made = response.json()
    assert made["status"] == "due" and made["dueDate"] == "2026-09-01"
    assert made["recallTypeName"] == "Hygiene" and made["practitionerId"] == str(practitioner.id)
    assert made["patientName"] == f"{patient.first_name} {patient.last_name}"
    assert made["nextReminderAt"] == "2026-08-18T09:00:00.000000Z"  # 14 days before, 09:00 practice time
    assert made["reminders"] == []

    moved = post(client, f"/clinical/patients/{patient.id}/recalls", {"recallTypeId": hygiene, "dueDate": "2026-10-01"})

    assert moved.status_code == 200, moved.content
    assert moved.json()["id"] == made["id"] and moved.json()["dueDate"] == "2026-10-01"
    listed = client.get(f"/clinical/patients/{patient.id}/recalls").json()["items"]
    assert [r["id"] for r in listed] == [made["id"]]
    assert client.get(f"/clinical/recalls/{made['id']}").json()["dueDate"] == "2026-10-01"


def test_setting_refuses_bad_input(client, patient, outsider):
    exam = recall_types(client)["Exam"]
    theirs = recall_types(outsider.session_client())["Exam"]
    path = f"/clinical/patients/{patient.id}/recalls"

    for body, field in (
        ({"recallTypeId": exam}, "dueDate"),
        ({"recallTypeId": exam, "dueDate": "1st of May"}, "dueDate"),
        ({"dueDate": "2026-05-01"}, "recallTypeId"),
        ({"recallTypeId": theirs, "dueDate": "2026-05-01"}, "recallTypeId"),
        ({"recallTypeId": exam, "dueDate": "2026-05-01", "practitionerId": "nope"}, "practitionerId"),
        ({"recallTypeId": exam, "dueDate": "2026-05-01", "note": "x"}, "note"),
    ):
        body_out = assert_error(post(client, path, body), 400, "VALIDATION_ERROR")
        assert field in body_out["details"]["fields"], body_out
    assert_error(post(client, path), 400, "VALIDATION_ERROR")
    assert Recall.objects.for_org(patient.organization).count() == 0


def test_another_practices_patient_and_recall_are_404(client, outsider, patient):
    theirs = PatientFactory(organization=outsider.organization)
    outsider_client = outsider.session_client()
    their_recall = set_recall(outsider_client, theirs, recall_types(outsider_client)["Exam"], "2026-05-01")
    exam = recall_types(client)["Exam"]

    assert_error(client.get(f"/clinical/patients/{theirs.id}/recalls"), 404, "NOT_FOUND")
    assert_error(
        post(client, f"/clinical/patients/{theirs.id}/recalls", {"recallTypeId": exam, "dueDate": "2026-06-01"}),
        404,
        "NOT_FOUND",
    )
    assert_error(client.get(f"/clinical/recalls/{their_recall['id']}"), 404, "NOT_FOUND")
    assert_error(post(client, f"/clinical/recalls/{their_recall['id']}/cancel"), 404, "NOT_FOUND")
    assert_error(
        post(client, f"/clinical/recalls/{their_recall['id']}/book", {"appointmentId": exam}), 404, "NOT_FOUND"
    )
    assert Recall.objects.for_org(outsider.organization).get(id=their_recall["id"]).status == "due"
    assert Recall.objects.for_org(outsider.organization).get(id=their_recall["id"]).due_date == date(2026, 5, 1)


def test_the_practice_list_filters_and_pages(client, owner, clock, outsider):
    types = recall_types(client)
    first, second = (
        PractitionerFactory(organization=owner.organization),
        PractitionerFactory(organization=owner.organization),
    )
    patients = [PatientFactory(organization=owner.organization) for _ in range(4)]
    overdue = set_recall(client, patients[0], types["Exam"], "2026-02-01", practitionerId=str(first.id))
    soon = set_recall(client, patients[1], types["Hygiene"], "2026-03-20", practitionerId=str(second.id))
    later = set_recall(client, patients[2], types["Exam"], "2026-08-01", practitionerId=str(first.id))
    cancelled = set_recall(client, patients[3], types["Exam"], "2026-04-01")
    assert post(client, f"/clinical/recalls/{cancelled['id']}/cancel").status_code == 200
    outsider_client = outsider.session_client()
    set_recall(
        outsider_client,
        PatientFactory(organization=outsider.organization),
        recall_types(outsider_client)["Exam"],
        "2026-01-01",
    )

    def ids(query=""):
        response = client.get(f"/clinical/recalls{query}")
        assert response.status_code == 200, response.content
        return [item["id"] for item in response.json()["items"]]

    assert ids() == [overdue["id"], soon["id"], later["id"]]
    assert ids("?overdue=true") == [overdue["id"]]
    assert ids(f"?recallTypeId={types['Exam']}") == [overdue["id"], later["id"]]
    assert ids(f"?practitionerId={second.id}") == [soon["id"]]
    assert ids("?dueFrom=2026-03-01&dueTo=2026-04-30") == [soon["id"]]
    assert ids("?status=cancelled") == [cancelled["id"]]
    assert len(ids("?status=all")) == 4
    page = client.get("/clinical/recalls?limit=2&offset=1").json()
    assert page["total"] == 3 and page["limit"] == 2 and page["offset"] == 1
    assert [item["id"] for item in page["items"]] == [soon["id"], later["id"]]
    assert client.get("/clinical/recalls?offset=10").json() == {"items": [], "total": 3, "limit": 25, "offset": 10}


def test_the_list_is_one_query(owner, client, django_assert_num_queries):
    types = recall_types(client)
    for index in range(5):
        set_recall(client, PatientFactory(organization=owner.organization), types["Exam"], f"2026-0{index + 1}-01")

    with django_assert_num_queries(1):
        rows, total = recall_rows(organization=owner.organization, query=RecallQuery(), limit=3, offset=0)

    assert total == 5 and len(rows) == 3


def test_the_list_refuses_bad_filters(client, outsider):
    theirs = recall_types(outsider.session_client())["Exam"]

    for query, field in (
        ("?overdue=yes", "overdue"),
        ("?dueFrom=2026-13-01", "dueFrom"),
        ("?dueFrom=2026-05-01&dueTo=2026-04-01", "dueTo"),
        (f"?recallTypeId={theirs}", "recallTypeId"),
        ("?status=late", "status"),
        ("?limit=0", "limit"),
    ):
        body = assert_error(client.get(f"/clinical/recalls{query}"), 400, "VALIDATION_ERROR")
        assert field in body["details"]["fields"], body


def test_booking_links_an_appointment_and_cancelling_closes(client, api, patient, practitioner, clock, outsider):
    recall = set_recall(client, patient, recall_types(client)["Hygiene"], "2026-04-01")
    appointment = book(api, patient, practitioner, NOW + timedelta(days=20))
    other = book(api, PatientFactory(organization=patient.organization), practitioner, NOW + timedelta(days=21))
    theirs = book(
        outsider.api_client(),
        PatientFactory(organization=outsider.organization),
        PractitionerFactory(organization=outsider.organization),
        NOW + timedelta(days=20),
    )
    path = f"/clinical/recalls/{recall['id']}/book"

    body = assert_error(post(client, path, {"appointmentId": other["id"]}), 400, "VALIDATION_ERROR")
    assert "appointmentId" in body["details"]["fields"]
    body = assert_error(post(client, path, {"appointmentId": theirs["id"]}), 400, "VALIDATION_ERROR")
    assert "appointmentId" in body["details"]["fields"]
    assert_error(post(client, path, {}), 400, "VALIDATION_ERROR")

    booked = post(client, path, {"appointmentId": appointment["id"]})
    assert booked.status_code == 200, booked.content
    assert booked.json()["status"] == "booked" and booked.json()["appointmentId"] == appointment["id"]
    assert booked.json()["nextReminderAt"] is None

    cancelled = post(client, f"/clinical/recalls/{recall['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert post(client, f"/clinical/recalls/{recall['id']}/cancel").status_code == 200  # harmless again
    assert_error(post(client, path, {"appointmentId": appointment["id"]}), 409, "RECALL_TRANSITION_NOT_ALLOWED")


def _complete(api, appointment_id):
    for status in ("arrived", "completed"):
        response = post(api, f"/appointments/{appointment_id}/status", {"status": status})
        assert response.status_code == 200, response.content


def test_completing_an_appointment_of_the_type_sets_the_next_recall(
    client, api, owner, patient, practitioner, clock, django_capture_on_commit_callbacks
):
    types = recall_types(client)
    hygiene = set_recall(client, patient, types["Hygiene"], "2026-03-12")
    exam = set_recall(client, patient, types["Exam"], "2026-03-12")
    appointment = book(api, patient, practitioner, NOW - timedelta(hours=2), kind="hygiene")

    with django_capture_on_commit_callbacks(execute=True):
        _complete(api, appointment["id"])

    done = Recall.objects.for_org(owner.organization).get(id=hygiene["id"])
    assert done.status == RecallStatus.COMPLETED and str(done.appointment_id) == appointment["id"]
    following = Recall.objects.for_org(owner.organization).get(previous=done)
    assert following.status == RecallStatus.DUE and following.due_date == date(2026, 9, 12)  # due + 6 months
    assert following.recall_type_id == done.recall_type_id
    assert Recall.objects.for_org(owner.organization).get(id=exam["id"]).status == "due"  # another type: untouched

    # The task again (a redelivery): nothing more.
    assert appointment_completed(str(owner.organization.id), appointment["id"]) == 0
    assert Recall.objects.for_org(owner.organization).filter(patient=patient).count() == 3


def test_a_long_overdue_recall_restarts_from_the_visit(client, api, owner, patient, practitioner, clock):
    recall = set_recall(client, patient, recall_types(client)["Hygiene"], "2025-01-31")
    appointment = book(api, patient, practitioner, NOW - timedelta(hours=2), kind="hygiene")
    _complete(api, appointment["id"])

    assert appointment_completed(str(owner.organization.id), appointment["id"]) == 1

    following = Recall.objects.for_org(owner.organization).get(previous_id=recall["id"])
    assert following.due_date == date(2026, 9, 10)  # 31 Jan 2025 + 6 months has passed: the visit + 6 months


def test_a_cancelled_booking_makes_the_recall_due_again(
    client, api, patient, practitioner, clock, django_capture_on_commit_callbacks
):
    recall = set_recall(client, patient, recall_types(client)["Hygiene"], "2026-04-01")
    appointment = book(api, patient, practitioner, NOW + timedelta(days=20))
    post(client, f"/clinical/recalls/{recall['id']}/book", {"appointmentId": appointment["id"]})

    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"/appointments/{appointment['id']}/cancel", {"reason": "ill"}).status_code == 200

    again = client.get(f"/clinical/recalls/{recall['id']}").json()
    assert again["status"] == "due" and again["appointmentId"] is None


def test_an_archived_type_cannot_be_set_and_a_merged_patient_is_409(client, api, owner, patient):
    types = recall_types(client)
    client.patch(f"/clinical/recall-types/{types['Exam']}", '{"archived": true}', content_type="application/json")
    body = assert_error(
        post(
            client, f"/clinical/patients/{patient.id}/recalls", {"recallTypeId": types["Exam"], "dueDate": "2026-05-01"}
        ),
        400,
        "VALIDATION_ERROR",
    )
    assert "recallTypeId" in body["details"]["fields"]
    survivor = PatientFactory(organization=owner.organization)
    assert post(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(patient.id)}).status_code == 200

    assert_error(
        post(
            client,
            f"/clinical/patients/{patient.id}/recalls",
            {"recallTypeId": types["Hygiene"], "dueDate": "2026-05-01"},
        ),
        409,
        "PATIENT_MERGED",
    )
    assert not Recall.objects.for_org(owner.organization).exists()


def test_new_reminder_offsets_apply_from_the_next_sweep(client, owner, patient, sms, clock):
    from apps.recalls.tasks import send_reminders

    hygiene = recall_types(client)["Hygiene"]
    recall = set_recall(client, patient, hygiene, "2026-03-16")  # -14 came on 2 March
    assert send_reminders()["sent"] == 1

    response = client.patch(
        f"/clinical/recall-types/{hygiene}", '{"reminderOffsets": [-14, -7, 0]}', content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert send_reminders()["sent"] == 1  # -7 (9 March) has come too; -14 is not sent again

    detail = client.get(f"/clinical/recalls/{recall['id']}").json()
    assert [(r["offsetDays"], r["outcome"]) for r in detail["reminders"]] == [(-14, "sent"), (-7, "sent")]
    assert detail["nextReminderAt"] == "2026-03-16T09:00:00.000000Z"
