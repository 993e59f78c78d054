"""Reads of treatment plans: the procedure catalogue, price-list fees, plans with totals computed in SQL, templates,
and the two sections of the patient record (treatmentPlans, chartingSummary)."""

import json
from collections import defaultdict

from django.db.models import BigIntegerField, Count, ExpressionWrapper, F, Prefetch, Q, Sum
from django.db.models.functions import Coalesce

from apps.core import crypto
from apps.patients.public import Patient
from apps.plans.models import (
    Fee,
    FeeSource,
    ItemStatus,
    PlanItem,
    PlanStatus,
    Procedure,
    TemplateItem,
    TreatmentPlan,
    TreatmentTemplate,
)

# One item's line total in minor units; cancelled items count for nothing.
LINE_TOTAL = ExpressionWrapper(F("fee") * F("quantity"), output_field=BigIntegerField())
_COUNTED = ~Q(status=ItemStatus.CANCELLED)


# --- procedures and fees ----------------------------------------------------------------------------------------------


def procedures_of(*, organization, include_archived: bool = False, category: str | None = None):
    procedures = Procedure.objects.for_org(organization).order_by("code", "id")
    if not include_archived:
        procedures = procedures.filter(archived_at__isnull=True)
    if category:
        procedures = procedures.filter(category=category)
    return procedures


def fees_of(*, organization, price_list):
    return (
        Fee.objects.for_org(organization)
        .filter(price_list=price_list)
        .select_related("procedure")
        .order_by("procedure__code", "id")
    )


def fee_for(*, organization, patient_id, procedure) -> tuple[int, str, str]:
    """(unit fee, currency, source) of a procedure for a patient: the fee on the patient's default price list, else
    the procedure's default fee."""
    price_list_id = (
        Patient.objects.for_org(organization)
        .filter(id=patient_id)
        .values_list("default_price_list_id", flat=True)
        .first()
    )
    if price_list_id is not None:
        fee = (
            Fee.objects.for_org(organization)
            .filter(price_list_id=price_list_id, procedure=procedure)
            .values_list("amount", "currency")
            .first()
        )
        if fee is not None:
            return fee[0], fee[1], FeeSource.PRICE_LIST
    return procedure.default_fee, procedure.currency, FeeSource.DEFAULT


# --- plans ------------------------------------------------------------------------------------------------------------


def plan_content(plan) -> dict:
    """The plan's title and notes, decrypted once per instance."""
    cached = getattr(plan, "_content", None)
    if cached is None:
        cached = json.loads(crypto.decrypt(plan.content_encrypted)) if plan.content_encrypted else {}
        plan._content = cached
    return cached


def _empty_totals() -> dict:
    return {"total": 0, "completed": 0, "remaining": 0, "itemCount": 0}


def plan_totals(*, organization, plan_ids) -> dict:
    """plan id → {"totals": {...}, "phases": [{phase, total, completed, remaining, itemCount}, ...]}, summed by
    PostgreSQL per phase (cancelled items excluded; remaining = planned items)."""
    rows = (
        PlanItem.objects.for_org(organization)
        .filter(plan_id__in=list(plan_ids))
        .values("plan_id", "phase")
        .annotate(
            total=Coalesce(Sum(LINE_TOTAL, filter=_COUNTED), 0),
            completed=Coalesce(Sum(LINE_TOTAL, filter=Q(status=ItemStatus.COMPLETED)), 0),
            remaining=Coalesce(Sum(LINE_TOTAL, filter=Q(status=ItemStatus.PLANNED)), 0),
            item_count=Count("id", filter=_COUNTED),
        )
        .order_by("plan_id", "phase")
    )
    result = defaultdict(lambda: {"totals": _empty_totals(), "phases": []})
    for row in rows:
        entry = result[row["plan_id"]]
        phase = {
            "phase": row["phase"],
            "total": row["total"],
            "completed": row["completed"],
            "remaining": row["remaining"],
            "itemCount": row["item_count"],
        }
        entry["phases"].append(phase)
        for key in ("total", "completed", "remaining", "itemCount"):
            entry["totals"][key] += phase[key]
    return {plan_id: result[plan_id] for plan_id in plan_ids}


def plans_of_patient(*, organization, patient_id, status: str | None = None):
    plans = TreatmentPlan.objects.for_org(organization).filter(patient_id=patient_id).order_by("-created_at", "-id")
    if status:
        plans = plans.filter(status=status)
    return plans


def items_of(*, organization, plan_id):
    return (
        PlanItem.objects.for_org(organization)
        .filter(plan_id=plan_id)
        .select_related("procedure")
        .order_by("phase", "created_at", "id")
    )


def plan_detail(*, organization, plan) -> dict:
    """What the plan's read answers with: the plan, its items in phase order, totals per phase and in all."""
    return {
        "plan": plan,
        "items": list(items_of(organization=organization, plan_id=plan.id)),
        **plan_totals(organization=organization, plan_ids=[plan.id])[plan.id],
    }


# --- templates --------------------------------------------------------------------------------------------------------


def templates_of(*, organization):
    items = TemplateItem.objects.for_org(organization).select_related("procedure").order_by("position")
    return (
        TreatmentTemplate.objects.for_org(organization)
        .prefetch_related(Prefetch("items", queryset=items))
        .order_by("name", "id")
    )


# --- the patient record ----------------------------------------------------------------------------------------------


def record_treatment_plans(organization, patient_id) -> list[dict]:
    """The treatmentPlans section of GET /patient-record/{id}: every plan, newest first, with its totals."""
    plans = list(plans_of_patient(organization=organization, patient_id=patient_id))
    totals = plan_totals(organization=organization, plan_ids=[plan.id for plan in plans])
    return [
        {
            "id": str(plan.id),
            "title": plan_content(plan).get("title", ""),
            "status": plan.status,
            "currency": plan.currency,
            "practitionerId": str(plan.practitioner_id) if plan.practitioner_id else None,
            "createdAt": plan.created_at.isoformat().replace("+00:00", "Z"),
            "totals": totals[plan.id]["totals"],
            "phases": totals[plan.id]["phases"],
        }
        for plan in plans
    ]


def record_charting_summary(organization, patient_id) -> dict:
    """The chartingSummary section: per tooth (FDI, ascending), the items planned (proposed or accepted plans), in
    progress (planned on an in-progress plan) and completed, each with its procedure code and surfaces. Items of
    declined and cancelled plans, cancelled items and items without a tooth are left out."""
    items = (
        PlanItem.objects.for_org(organization)
        .filter(plan__patient_id=patient_id, tooth__isnull=False)
        .exclude(status=ItemStatus.CANCELLED)
        .values("id", "plan_id", "tooth", "surfaces", "status", "plan__status", "procedure__code", "completed_at")
        .order_by("tooth", "created_at", "id")
    )
    teeth: dict[int, dict] = {}
    for item in items:
        if item["status"] == ItemStatus.COMPLETED:
            bucket = "completed"
        elif item["plan__status"] == PlanStatus.IN_PROGRESS:
            bucket = "inProgress"
        elif item["plan__status"] in (PlanStatus.PROPOSED, PlanStatus.ACCEPTED):
            bucket = "planned"
        else:
            continue
        tooth = teeth.setdefault(
            item["tooth"], {"tooth": item["tooth"], "planned": [], "inProgress": [], "completed": []}
        )
        tooth[bucket].append(
            {
                "itemId": str(item["id"]),
                "planId": str(item["plan_id"]),
                "procedureCode": item["procedure__code"],
                "surfaces": list(item["surfaces"]),
            }
        )
    return {"teeth": list(teeth.values())}
