"""A patient's erasure removes their recalls, reminder attempts, waitlist entries and offers; a merge moves them to
the survivor (an open recall of a type both have: the survivor's stands); the patient record's sections."""

from datetime import timedelta

from apps.clinical.public import record_sections
from apps.recalls.models import Recall, RecallReminder, WaitlistEntry, WaitlistOffer
from apps.recalls.tasks import send_reminders
from tests.factories import PatientFactory
from tests.recalls.conftest import NOW, book, post, recall_types, set_recall


def test_erasure_removes_the_patients_rows_only(
    client, api, owner, patient, practitioner, sms, clock, django_capture_on_commit_callbacks
):
    other = PatientFactory(organization=owner.organization)
    types = recall_types(client)
    set_recall(client, patient, types["Exam"], "2026-03-10")
    kept = set_recall(client, other, types["Exam"], "2026-03-10")
    send_reminders()
    post(client, "/clinical/waitlist", {"patientId": str(patient.id), "appointmentType": "hygiene"})
    freed = book(api, other, practitioner, NOW + timedelta(days=2))
    with django_capture_on_commit_callbacks(execute=True):
        post(api, f"/appointments/{freed['id']}/cancel", {})
    assert WaitlistOffer.objects.for_org(owner.organization).filter(patient=patient).exists()

    response = api.delete(f"/patients/{patient.id}")

    assert response.status_code == 200, response.content
    assert [str(pk) for pk in Recall.objects.for_org(owner.organization).values_list("id", flat=True)] == [kept["id"]]
    assert RecallReminder.objects.for_org(owner.organization).filter(recall_id=kept["id"]).count() == 2
    assert RecallReminder.objects.for_org(owner.organization).count() == 2
    assert not WaitlistEntry.objects.for_org(owner.organization).exists()
    assert not WaitlistOffer.objects.for_org(owner.organization).exists()


def test_a_merge_moves_recalls_and_entries_to_the_survivor(client, api, owner):
    survivor, duplicate = (
        PatientFactory(organization=owner.organization),
        PatientFactory(organization=owner.organization),
    )
    types = recall_types(client)
    theirs = set_recall(client, survivor, types["Exam"], "2026-05-01")
    clashing = set_recall(client, duplicate, types["Exam"], "2026-06-01")
    moved = set_recall(client, duplicate, types["Hygiene"], "2026-06-01")
    post(client, "/clinical/waitlist", {"patientId": str(duplicate.id), "appointmentType": "hygiene"})

    response = post(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)})

    assert response.status_code == 200, response.content
    rows = {str(r.id): r for r in Recall.objects.for_org(owner.organization)}
    assert {r.patient_id for r in rows.values()} == {survivor.id}
    assert rows[theirs["id"]].status == "due" and rows[moved["id"]].status == "due"
    assert rows[clashing["id"]].status == "cancelled"
    assert WaitlistEntry.objects.for_org(owner.organization).get().patient_id == survivor.id


def test_the_patient_record_sections(client, owner, patient):
    recall = set_recall(client, patient, recall_types(client)["Exam"], "2026-05-01")
    entry = post(client, "/clinical/waitlist", {"patientId": str(patient.id), "appointmentType": "review"}).json()
    sections = record_sections()

    recalls = sections["recalls"](owner.organization, patient.id)
    waiting = sections["waitlist"](owner.organization, patient.id)

    assert recalls == [
        {
            "id": recall["id"],
            "recallTypeId": recall["recallTypeId"],
            "recallTypeName": "Exam",
            "dueDate": "2026-05-01",
            "status": "due",
            "appointmentId": None,
        }
    ]
    assert [(w["id"], w["appointmentType"], w["status"]) for w in waiting] == [(entry["id"], "review", "waiting")]
    assert "notes" not in waiting[0]
