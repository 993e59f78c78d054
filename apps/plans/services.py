"""Writes of treatment plans: the procedure catalogue and price-list fees, plans and their items, status moves, and
treatment templates.

Every change to a plan or its items locks the plan's row first (select_for_update), so concurrent status moves and
item changes happen one after the other and the loser sees the winner's result (a refused move answers 409 with the
allowed list). Every change emits one `pms_treatment_plan.updated` with action and changedFields, and ids, statuses
and totals only: never the title, the notes or any other clinical detail.
"""

import json

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.clinical.public import practitioner_of_user
from apps.core import crypto
from apps.core.errors import NotFound, ValidationFailed
from apps.events.services import Actor, emit
from apps.patients.public import PatientMerged
from apps.plans import rules, selectors
from apps.plans.errors import (
    CurrencyMismatch,
    DuplicateCode,
    DuplicateName,
    ItemNotPlanned,
    ItemTransitionNotAllowed,
    PlanClosed,
    PlanTooLarge,
    PlanTransitionNotAllowed,
)
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

EVENT = "pms_treatment_plan.updated"
SUBJECT = "pms_treatment_plan"


def _invalid(problems: dict[str, str]) -> ValidationFailed:
    first = next(iter(problems))
    return ValidationFailed(
        f"{first}: {problems[first]}", details={"fields": {name: [problem] for name, problem in problems.items()}}
    )


# --- procedures and fees ----------------------------------------------------------------------------------------------


def procedures_seed(*, organization) -> int:
    """The starter catalogue, once: only while the practice has no procedure at all. Safe under concurrency (the
    unique code makes a second insert a no-op)."""
    if Procedure.objects.for_org(organization).exists():
        return 0
    currency = rules.practice_currency(organization)
    rows = [
        Procedure(
            organization=organization,
            code=code,
            name=name,
            category=category,
            default_fee=fee,
            currency=currency,
            tooth_required=tooth,
            surfaces_required=surfaces,
        )
        for code, name, category, fee, tooth, surfaces in rules.STARTER_PROCEDURES
    ]
    return len(Procedure.objects.bulk_create(rows, ignore_conflicts=True))


@transaction.atomic
def procedure_create(*, organization, actor, data: dict) -> Procedure:
    procedures_seed(organization=organization)
    if Procedure.objects.for_org(organization).filter(code__iexact=data["code"]).exists():
        raise DuplicateCode(details={"code": data["code"]})
    try:
        with transaction.atomic():
            return Procedure.objects.create(
                organization=organization, currency=rules.practice_currency(organization), **data
            )
    except IntegrityError:
        raise DuplicateCode(details={"code": data["code"]}) from None


@transaction.atomic
def procedure_update(*, organization, actor, procedure_id, data: dict) -> Procedure:
    procedure = Procedure.objects.for_org(organization).select_for_update().filter(id=procedure_id).first()
    if procedure is None:
        raise NotFound("No such procedure.")
    archived = data.pop("archived", None)
    if archived is not None:
        procedure.archived_at = (procedure.archived_at or timezone.now()) if archived else None
    if "default_fee" in data:
        procedure.currency = rules.practice_currency(organization)
    for name, value in data.items():
        setattr(procedure, name, value)
    if procedure.surfaces_required and not procedure.tooth_required:
        raise ValidationFailed.for_field("surfacesRequired", "a procedure that needs surfaces also needs a tooth")
    procedure.save()
    return procedure


@transaction.atomic
def fees_set(*, organization, actor, price_list, entries: list[dict]) -> None:
    """Set or clear (amount null) the fees of procedures on a price list. Existing plan items keep their fee."""
    currency = rules.practice_currency(organization)
    clear = [entry["procedure"].id for entry in entries if entry["amount"] is None]
    rows = [
        Fee(
            organization=organization,
            price_list=price_list,
            procedure=entry["procedure"],
            amount=entry["amount"],
            currency=currency,
        )
        for entry in entries
        if entry["amount"] is not None
    ]
    if clear:
        Fee.objects.for_org(organization).filter(price_list=price_list, procedure_id__in=clear).delete()
    if rows:
        Fee.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["organization", "price_list", "procedure"],
            update_fields=["amount", "currency", "updated_at"],
        )


# --- plans ------------------------------------------------------------------------------------------------------------


def _locked_plan(*, organization, plan_id) -> TreatmentPlan:
    plan = TreatmentPlan.objects.for_org(organization).select_for_update().filter(id=plan_id).first()
    if plan is None:
        raise NotFound("No such treatment plan.")
    return plan


def _emit(*, organization, actor, plan, action: str, changed_fields, extra: dict | None = None) -> None:
    totals = selectors.plan_totals(organization=organization, plan_ids=[plan.id])[plan.id]["totals"]
    data = {
        "planId": str(plan.id),
        "patientId": str(plan.patient_id),
        "status": plan.status,
        "currency": plan.currency,
        "totals": totals,
        **(extra or {}),
    }
    emit(
        organization=organization,
        type=EVENT,
        subject_type=SUBJECT,
        subject_id=plan.id,
        actor=Actor.user(actor),
        data=data,
        action=action,
        changed_fields=sorted(changed_fields),
    )


def _encrypt_content(title: str, notes: str) -> str:
    return crypto.encrypt(json.dumps({"title": title, "notes": notes}))


@transaction.atomic
def plan_create(*, organization, actor, patient, title: str, notes: str = "", practitioner=None) -> TreatmentPlan:
    """A proposed plan for the patient; its practitioner is the one given, else the author's linked profile."""
    if patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)
    if practitioner is None:
        practitioner = practitioner_of_user(organization, actor)
    plan = TreatmentPlan.objects.create(
        organization=organization,
        patient=patient,
        status=PlanStatus.PROPOSED,
        currency=rules.practice_currency(organization),
        practitioner=practitioner,
        created_by=actor,
        content_encrypted=_encrypt_content(title, notes),
        status_changed_at=timezone.now(),
    )
    plan._content = {"title": title, "notes": notes}
    _emit(organization=organization, actor=actor, plan=plan, action="created", changed_fields=["status"])
    return plan


@transaction.atomic
def plan_update(*, organization, actor, plan_id, data: dict) -> TreatmentPlan:
    """Change the title, notes or practitioner. Unchanged values change nothing and emit nothing."""
    plan = _locked_plan(organization=organization, plan_id=plan_id)
    content = dict(selectors.plan_content(plan))
    changed = []
    for name in ("title", "notes"):
        if name in data and data[name] != content.get(name, ""):
            content[name] = data[name]
            changed.append(name)
    if "title" in changed or "notes" in changed:
        plan.content_encrypted = _encrypt_content(content.get("title", ""), content.get("notes", ""))
        plan._content = content
    if "practitioner" in data and data["practitioner"] != plan.practitioner:
        plan.practitioner = data["practitioner"]
        changed.append("practitionerId")
    if changed:
        plan.save()
        _emit(organization=organization, actor=actor, plan=plan, action="updated", changed_fields=changed)
    return plan


def _move_plan(plan, target: str) -> None:
    plan.status = target
    plan.status_changed_at = timezone.now()
    plan.save(update_fields=["status", "status_changed_at", "updated_at"])


@transaction.atomic
def plan_set_status(*, organization, actor, plan_id, status: str) -> TreatmentPlan:
    """proposed → accepted | declined | cancelled; accepted → in_progress | cancelled; in_progress → cancelled;
    declined → proposed. Completion follows the items. The same status again is a no-op."""
    plan = _locked_plan(organization=organization, plan_id=plan_id)
    if status == plan.status:
        return plan
    allowed = rules.PLAN_MOVES[plan.status]
    if status not in allowed:
        raise PlanTransitionNotAllowed(status=plan.status, target=status, allowed=allowed)
    _move_plan(plan, status)
    _emit(organization=organization, actor=actor, plan=plan, action="status_changed", changed_fields=["status"])
    return plan


# --- items ------------------------------------------------------------------------------------------------------------


def _open_plan(*, organization, plan_id) -> TreatmentPlan:
    plan = _locked_plan(organization=organization, plan_id=plan_id)
    if plan.status not in rules.OPEN_PLAN_STATUSES:
        raise PlanClosed(status=plan.status)
    return plan


def _room_for(*, organization, plan, count: int) -> None:
    held = PlanItem.objects.for_org(organization).filter(plan=plan).count()
    if held + count > rules.MAX_ITEMS_PER_PLAN:
        raise PlanTooLarge(limit=rules.MAX_ITEMS_PER_PLAN)


def _fee(*, organization, plan, procedure) -> tuple[int, str]:
    amount, currency, source = selectors.fee_for(
        organization=organization, patient_id=plan.patient_id, procedure=procedure
    )
    if currency != plan.currency:
        raise CurrencyMismatch(plan_currency=plan.currency, fee_currency=currency)
    return amount, source


def _locked_item(*, organization, plan, item_id) -> PlanItem:
    item = (
        PlanItem.objects.for_org(organization)
        .select_for_update()
        .select_related("procedure")
        .filter(plan=plan, id=item_id)
        .first()
    )
    if item is None:
        raise NotFound("No such treatment plan item.")
    return item


def _items_changed(*, organization, actor, plan, action: str, changed_fields, extra: dict) -> None:
    """An item change: the plan's updated_at moves, and one event names the item and the plan's new totals."""
    TreatmentPlan.objects.for_org(organization).filter(id=plan.id).update(updated_at=timezone.now())
    _emit(organization=organization, actor=actor, plan=plan, action=action, changed_fields=changed_fields, extra=extra)


@transaction.atomic
def item_add(*, organization, actor, plan_id, data: dict) -> PlanItem:
    """Add a procedure to an open plan. Its unit fee is fixed now: the one given, else the patient's price-list fee,
    else the procedure's default fee."""
    plan = _open_plan(organization=organization, plan_id=plan_id)
    procedure = data["procedure"]
    surfaces = data.get("surfaces", "")
    problems = rules.item_problems(procedure=procedure, tooth=data.get("tooth"), surfaces=surfaces)
    if problems:
        raise _invalid(problems)
    _room_for(organization=organization, plan=plan, count=1)
    if data.get("fee") is not None:
        fee, source = data["fee"], FeeSource.MANUAL
    else:
        fee, source = _fee(organization=organization, plan=plan, procedure=procedure)
    item = PlanItem.objects.create(
        organization=organization,
        plan=plan,
        procedure=procedure,
        tooth=data.get("tooth"),
        surfaces=surfaces,
        quantity=data.get("quantity", 1),
        phase=data.get("phase", 1),
        fee=fee,
        fee_source=source,
        practitioner=data.get("practitioner") or plan.practitioner,
    )
    _items_changed(
        organization=organization,
        actor=actor,
        plan=plan,
        action="item_added",
        changed_fields=["items"],
        extra={"itemId": str(item.id), "itemStatus": item.status},
    )
    return item


_ITEM_FIELDS = ("tooth", "surfaces", "quantity", "phase", "fee")


@transaction.atomic
def item_update(*, organization, actor, plan_id, item_id, data: dict) -> PlanItem:
    """Change a planned item of an open plan: tooth, surfaces, quantity, phase, practitioner, or its fee (a fee
    given here is a manual fee)."""
    plan = _open_plan(organization=organization, plan_id=plan_id)
    item = _locked_item(organization=organization, plan=plan, item_id=item_id)
    if item.status != ItemStatus.PLANNED:
        raise ItemNotPlanned(status=item.status)
    changed = []
    for name in _ITEM_FIELDS:
        if name in data and data[name] != getattr(item, name):
            setattr(item, name, data[name])
            changed.append(name)
    if "fee" in changed:
        item.fee_source = FeeSource.MANUAL
    if "practitioner" in data and data["practitioner"] != item.practitioner:
        item.practitioner = data["practitioner"]
        changed.append("practitionerId")
    problems = rules.item_problems(procedure=item.procedure, tooth=item.tooth, surfaces=item.surfaces)
    if problems:
        raise _invalid(problems)
    if changed:
        item.save()
        _items_changed(
            organization=organization,
            actor=actor,
            plan=plan,
            action="item_updated",
            changed_fields=["items"] + [f"items.{name}" for name in changed],
            extra={"itemId": str(item.id), "itemStatus": item.status},
        )
    return item


@transaction.atomic
def item_remove(*, organization, actor, plan_id, item_id) -> None:
    """Remove a planned item of an open plan (completed items stay: they are charged; cancel instead)."""
    plan = _open_plan(organization=organization, plan_id=plan_id)
    item = _locked_item(organization=organization, plan=plan, item_id=item_id)
    if item.status != ItemStatus.PLANNED:
        raise ItemNotPlanned(status=item.status)
    item_id = str(item.id)
    item.delete()
    _items_changed(
        organization=organization,
        actor=actor,
        plan=plan,
        action="item_removed",
        changed_fields=["items"],
        extra={"itemId": item_id},
    )


@transaction.atomic
def item_set_status(*, organization, actor, plan_id, item_id, status: str) -> tuple[TreatmentPlan, PlanItem]:
    """planned → completed (the plan accepted or in progress) or cancelled (the plan open). Completing the first item
    moves an accepted plan to in_progress; once no item is planned and one is completed, the plan is completed. The
    same status again is a no-op."""
    plan = _locked_plan(organization=organization, plan_id=plan_id)
    item = _locked_item(organization=organization, plan=plan, item_id=item_id)
    if status == item.status:
        return plan, item
    allowed = rules.ITEM_MOVES[item.status]
    if status not in allowed:
        raise ItemTransitionNotAllowed(status=item.status, target=status, allowed=allowed)
    working = status == ItemStatus.COMPLETED and plan.status not in rules.WORKING_PLAN_STATUSES
    if working or plan.status not in rules.OPEN_PLAN_STATUSES:
        raise ItemTransitionNotAllowed(status=item.status, target=status, allowed=(), plan_status=plan.status)
    item.status = status
    item.completed_at = timezone.now() if status == ItemStatus.COMPLETED else None
    item.save(update_fields=["status", "completed_at", "updated_at"])
    changed = ["items", "items.status"]
    if status == ItemStatus.COMPLETED and plan.status == PlanStatus.ACCEPTED:
        _move_plan(plan, PlanStatus.IN_PROGRESS)
        changed.append("status")
    if plan.status in rules.WORKING_PLAN_STATUSES:
        remaining = PlanItem.objects.for_org(organization).filter(plan=plan)
        if (
            not remaining.filter(status=ItemStatus.PLANNED).exists()
            and remaining.filter(status=ItemStatus.COMPLETED).exists()
        ):
            _move_plan(plan, PlanStatus.COMPLETED)
            if "status" not in changed:
                changed.append("status")
    _items_changed(
        organization=organization,
        actor=actor,
        plan=plan,
        action="item_status_changed",
        changed_fields=changed,
        extra={"itemId": str(item.id), "itemStatus": item.status},
    )
    return plan, item


# --- templates --------------------------------------------------------------------------------------------------------


def _template_items(*, organization, template, items: list[dict]) -> None:
    TemplateItem.objects.bulk_create(
        [
            TemplateItem(
                organization=organization,
                template=template,
                procedure=entry["procedure"],
                position=position,
                phase=entry.get("phase", 1),
                quantity=entry.get("quantity", 1),
                surfaces=entry.get("surfaces", ""),
            )
            for position, entry in enumerate(items)
        ]
    )


def _name_free(*, organization, name: str, template_id=None) -> None:
    taken = TreatmentTemplate.objects.for_org(organization).filter(name__iexact=name).exclude(id=template_id)
    if taken.exists():
        raise DuplicateName(details={"name": name})


@transaction.atomic
def template_create(*, organization, actor, name: str, items: list[dict]) -> TreatmentTemplate:
    _name_free(organization=organization, name=name)
    try:
        with transaction.atomic():
            template = TreatmentTemplate.objects.create(organization=organization, name=name)
    except IntegrityError:
        raise DuplicateName(details={"name": name}) from None
    _template_items(organization=organization, template=template, items=items)
    return template


@transaction.atomic
def template_update(*, organization, actor, template_id, data: dict) -> TreatmentTemplate:
    """Rename, or replace the items (the whole list)."""
    template = TreatmentTemplate.objects.for_org(organization).select_for_update().filter(id=template_id).first()
    if template is None:
        raise NotFound("No such treatment template.")
    if "name" in data and data["name"] != template.name:
        _name_free(organization=organization, name=data["name"], template_id=template.id)
        template.name = data["name"]
        try:
            with transaction.atomic():
                template.save()
        except IntegrityError:
            raise DuplicateName(details={"name": data["name"]}) from None
    if "items" in data:
        TemplateItem.objects.for_org(organization).filter(template=template).delete()
        _template_items(organization=organization, template=template, items=data["items"])
        TreatmentTemplate.objects.for_org(organization).filter(id=template.id).update(updated_at=timezone.now())
    return template


@transaction.atomic
def template_delete(*, organization, actor, template_id) -> None:
    deleted, _ = TreatmentTemplate.objects.for_org(organization).filter(id=template_id).delete()
    if not deleted:
        raise NotFound("No such treatment template.")


@transaction.atomic
def template_apply(*, organization, actor, plan_id, template, tooth: int | None = None) -> list[PlanItem]:
    """Add the template's procedures to an open plan, each at the patient's fee (price list, else default). `tooth`
    goes on the items whose procedure needs one (and on none other); the template's surfaces must fit it."""
    plan = _open_plan(organization=organization, plan_id=plan_id)
    entries = list(TemplateItem.objects.for_org(organization).filter(template=template).select_related("procedure"))
    needs_tooth = [entry for entry in entries if entry.procedure.tooth_required or entry.surfaces]
    if needs_tooth and tooth is None:
        raise ValidationFailed.for_field("tooth", "this template's procedures need a tooth")
    for entry in needs_tooth:
        problem = rules.surfaces_problem(tooth, entry.surfaces)
        if problem:
            raise ValidationFailed.for_field("tooth", f"{entry.procedure.code}: {problem}")
    _room_for(organization=organization, plan=plan, count=len(entries))
    items = []
    for entry in entries:
        fee, source = _fee(organization=organization, plan=plan, procedure=entry.procedure)
        items.append(
            PlanItem(
                organization=organization,
                plan=plan,
                procedure=entry.procedure,
                tooth=tooth if entry in needs_tooth else None,
                surfaces=entry.surfaces,
                quantity=entry.quantity,
                phase=entry.phase,
                fee=fee,
                fee_source=source,
                practitioner=plan.practitioner,
            )
        )
    PlanItem.objects.bulk_create(items)
    _items_changed(
        organization=organization,
        actor=actor,
        plan=plan,
        action="template_applied",
        changed_fields=["items"],
        extra={"templateId": str(template.id), "itemIds": [str(item.id) for item in items]},
    )
    return items
