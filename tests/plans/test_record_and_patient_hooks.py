"""The patient record's treatmentPlans and chartingSummary sections, and a patient's erasure and merge."""

import pytest
from django.db import transaction

from apps.clinical.public import record_sections
from apps.patients.hooks import run_erasure_hooks, run_merge_hooks
from apps.plans.models import PlanItem, TreatmentPlan
from tests.factories import PatientFactory
from tests.plans.conftest import add_item, plan_events

pytestmark = pytest.mark.django_db


def _status(client, plan_id, status):
    client.post(f"/clinical/treatment-plans/{plan_id}/status", {"status": status}, content_type="application/json")


def test_record_sections(client, patient, plan, procedures, practice):
    crown = add_item(client, plan["id"], procedures["CROWN"]["id"], tooth=16).json()
    filling = add_item(client, plan["id"], procedures["FILL-CO"]["id"], tooth=36, surfaces=["O", "D"]).json()
    add_item(client, plan["id"], procedures["EXAM"]["id"])  # no tooth: not charted
    declined = client.post(
        f"/clinical/patients/{patient.id}/treatment-plans", {"title": "Whitening"}, content_type="application/json"
    ).json()
    add_item(client, declined["id"], procedures["EXT"]["id"], tooth=48)
    _status(client, declined["id"], "declined")
    _status(client, plan["id"], "accepted")
    client.post(
        f"/clinical/treatment-plans/{plan['id']}/items/{crown['id']}/status",
        {"status": "completed"},
        content_type="application/json",
    )
    sections = record_sections()
    plans = sections["treatmentPlans"](practice, patient.id)
    assert [row["id"] for row in plans] == [declined["id"], plan["id"]]
    assert plans[1]["status"] == "in_progress" and plans[1]["totals"]["completed"] == 65000

    chart = sections["chartingSummary"](practice, patient.id)
    assert chart == {
        "teeth": [
            {
                "tooth": 16,
                "planned": [],
                "inProgress": [],
                "completed": [{"itemId": crown["id"], "planId": plan["id"], "procedureCode": "CROWN", "surfaces": []}],
            },
            {
                "tooth": 36,
                "planned": [],
                "inProgress": [
                    {"itemId": filling["id"], "planId": plan["id"], "procedureCode": "FILL-CO", "surfaces": ["O", "D"]}
                ],
                "completed": [],
            },
        ]
    }
    # Another patient's record is empty.
    other_patient = PatientFactory(organization=practice)
    assert sections["treatmentPlans"](practice, other_patient.id) == []
    assert sections["chartingSummary"](practice, other_patient.id) == {"teeth": []}


def test_erasure_removes_the_patients_plans_only(client, patient, plan, procedures, practice):
    add_item(client, plan["id"], procedures["EXAM"]["id"])
    survivor = PatientFactory(organization=practice)
    kept = client.post(
        f"/clinical/patients/{survivor.id}/treatment-plans", {"title": "Keep"}, content_type="application/json"
    ).json()
    with transaction.atomic():
        run_erasure_hooks(organization=practice, patient_ids=[patient.id])
    assert [str(row.id) for row in TreatmentPlan.objects.for_org(practice)] == [kept["id"]]
    assert not PlanItem.objects.for_org(practice).exists()


def test_merge_moves_plans_to_the_survivor(client, patient, plan, practice):
    survivor = PatientFactory(organization=practice)
    with transaction.atomic():
        run_merge_hooks(organization=practice, survivor=survivor, duplicate=patient)
    assert TreatmentPlan.objects.for_org(practice).get(id=plan["id"]).patient_id == survivor.id
    event = plan_events(practice)[-1]
    assert event.data["action"] == "patient_merged" and event.data["patientId"] == str(survivor.id)
    listed = client.get(f"/clinical/patients/{survivor.id}/treatment-plans").json()
    assert [row["id"] for row in listed["items"]] == [plan["id"]]
