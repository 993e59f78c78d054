"""Tasks take part in the patients area's erasure and merge: erasing a patient deletes their tasks in the same
transaction; merging re-points them to the survivor (with a task.updated event per task moved)."""

import pytest

from apps.patients import hooks
from apps.patients.models import Patient
from apps.tasks.hooks import erase_tasks_of_patients, repoint_tasks_to_survivor
from apps.tasks.models import Task
from tests.factories import PatientFactory
from tests.tasks.helpers import make_task, post_json, task_events, url


def test_hooks_are_registered():
    assert erase_tasks_of_patients in hooks._erasure_hooks
    assert repoint_tasks_to_survivor in hooks._merge_hooks


def test_erasing_a_patient_deletes_their_tasks_and_those_of_records_merged_into_them(owner, api):
    org = owner.organization
    patient, duplicate, other = (PatientFactory(organization=org) for _ in range(3))
    gone = [make_task(org, patient=patient), make_task(org, patient=patient, status="completed")]
    merged_task = make_task(org, patient=duplicate)
    kept = make_task(org, patient=other)
    unlinked = make_task(org)
    assert post_json(api, f"/patients/{patient.id}/merge", {"duplicatePatientId": str(duplicate.id)}).status_code == 200

    response = api.delete(f"/patients/{patient.id}")

    assert response.status_code == 200, response.content
    remaining = set(Task.objects.for_org(org).values_list("id", flat=True))
    assert remaining == {kept.id, unlinked.id}
    assert not {t.id for t in gone} & remaining and merged_task.id not in remaining
    assert api.get(url(gone[0])).status_code == 404


def test_erasure_that_fails_later_keeps_the_tasks(owner, api):
    """The hook runs in the erasing transaction: a failure after it rolls the deletion back."""
    org = owner.organization
    patient = PatientFactory(organization=org)
    task = make_task(org, patient=patient)

    def failing_hook(**kwargs):
        raise RuntimeError("boom")

    saved = list(hooks._erasure_hooks)
    hooks._erasure_hooks.append(failing_hook)
    try:
        with pytest.raises(RuntimeError):
            from apps.patients.services import patient_erase

            patient_erase(organization=org, patient=patient)
    finally:
        hooks._erasure_hooks[:] = saved

    assert Task.objects.for_org(org).filter(id=task.id).exists()
    assert Patient.objects.for_org(org).filter(id=patient.id).exists()


def test_merging_repoints_the_duplicates_tasks_to_the_survivor(owner, outsider, api):
    org = owner.organization
    survivor, duplicate = PatientFactory(organization=org), PatientFactory(organization=org)
    survivor_task = make_task(org, patient=survivor)
    moved = [make_task(org, patient=duplicate), make_task(org, patient=duplicate, status="cancelled")]
    outsider_task = make_task(outsider.organization, patient=PatientFactory(organization=outsider.organization))

    response = post_json(api, f"/patients/{survivor.id}/merge", {"duplicatePatientId": str(duplicate.id)})

    assert response.status_code == 200, response.content
    assert set(Task.objects.for_org(org).filter(patient=survivor).values_list("id", flat=True)) == {
        survivor_task.id,
        *(t.id for t in moved),
    }
    assert not Task.objects.for_org(org).filter(patient=duplicate).exists()
    listed = api.get("/tasks", {"patientId": str(survivor.id)}).json()
    assert listed["total"] == 3
    for task in moved:
        (event,) = task_events(org, task.id, "task.updated")
        assert event.data == {
            "action": "patient_merged",
            "changedFields": ["patientId"],
            "patientId": str(survivor.id),
            "mergedPatientId": str(duplicate.id),
        }
    assert task_events(org, survivor_task.id) == []
    assert Task.objects.for_org(outsider.organization).get(id=outsider_task.id).patient_id != survivor.id
