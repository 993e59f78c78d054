"""Explicit registries through which other areas take part in erasing and merging a patient.

Each area registers in its AppConfig.ready():

    patients.hooks.on_erase(erase_journeys_of_patient)      # fn(*, organization, patient_ids) -> ErasureResult
    patients.hooks.on_merge(repoint_journeys_to_survivor)   # fn(*, organization, survivor, duplicate) -> None

Hooks run inside the caller's transaction: if any raises, the whole erasure or merge rolls back. An erasure hook
returns how many stored call recordings it scheduled for deletion (the DELETE response reports the sum).
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.utils import timezone

from apps.events.services import Actor, PendingEvent, emit_many


@dataclass(frozen=True)
class ErasureResult:
    recordings_scheduled: int = 0


ErasureHook = Callable[..., ErasureResult | None]
MergeHook = Callable[..., None]

_erasure_hooks: list[ErasureHook] = []
_merge_hooks: list[MergeHook] = []


def on_erase(hook: ErasureHook) -> ErasureHook:
    if hook not in _erasure_hooks:
        _erasure_hooks.append(hook)
    return hook


def on_merge(hook: MergeHook) -> MergeHook:
    if hook not in _merge_hooks:
        _merge_hooks.append(hook)
    return hook


def run_erasure_hooks(*, organization, patient_ids: list) -> int:
    scheduled = 0
    for hook in list(_erasure_hooks):
        result = hook(organization=organization, patient_ids=patient_ids)
        scheduled += result.recordings_scheduled if result else 0
    return scheduled


def run_merge_hooks(*, organization, survivor, duplicate) -> None:
    for hook in list(_merge_hooks):
        hook(organization=organization, survivor=survivor, duplicate=duplicate)


def repoint_rows_to_survivor(*, organization, model, subject_type: str, survivor, duplicate) -> int:
    """The merge step of an area whose rows point at a patient (`model.patient`): the duplicate's rows now belong to
    the survivor, and each moved row records one `<subject_type>.updated` (action patient_merged), in one INSERT."""
    rows = model.objects.for_org(organization).filter(patient_id=duplicate.pk)
    moved = list(rows.values_list("id", flat=True))
    if not moved:
        return 0
    model.objects.for_org(organization).filter(id__in=moved).update(patient_id=survivor.pk, updated_at=timezone.now())
    emit_many(
        organization=organization,
        actor=Actor.system(),
        events=[
            PendingEvent(
                type=f"{subject_type}.updated",
                subject_type=subject_type,
                subject_id=row_id,
                data={"patientId": str(survivor.pk), "mergedPatientId": str(duplicate.pk)},
                action="patient_merged",
                changed_fields=("patientId",),
            )
            for row_id in moved
        ],
    )
    return len(moved)
