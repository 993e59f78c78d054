"""Recalls' and the waitlist's part in other areas' changes (registered in RecallsConfig.ready()): a patient's erasure
and merge, an appointment's slot freed or the appointment completed, and the patient record's two sections."""

from django.db.models import Q
from django.utils import timezone

from apps.core.wire import datetime_string
from apps.recalls.models import OPEN_RECALL_STATUSES, Recall, RecallStatus, WaitlistEntry, WaitlistOffer


def erase_recalls_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the patients' recalls (and reminder attempts), waitlist entries and offers go with them."""
    WaitlistOffer.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()
    WaitlistEntry.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()
    Recall.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_recalls_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's recalls and waitlist entries belong to the survivor. Where both have an open recall of a
    type, the survivor's stands and the duplicate's is cancelled (one open recall per patient and type)."""
    now = timezone.now()
    recalls = Recall.objects.for_org(organization)
    survivor_types = recalls.filter(patient_id=survivor.pk, status__in=OPEN_RECALL_STATUSES).values("recall_type_id")
    recalls.filter(patient_id=duplicate.pk, status__in=OPEN_RECALL_STATUSES, recall_type_id__in=survivor_types).update(
        status=RecallStatus.CANCELLED, cancelled_at=now, next_reminder_at=None, updated_at=now
    )
    recalls.filter(patient_id=duplicate.pk).update(patient_id=survivor.pk, updated_at=now)
    for model in (WaitlistEntry, WaitlistOffer):
        model.objects.for_org(organization).filter(patient_id=duplicate.pk).update(
            patient_id=survivor.pk, updated_at=now
        )


def queue_slot_offers(slot) -> None:
    """apps.appointments' on_slot_freed (after the commit): the work goes to a Celery task."""
    from apps.recalls.tasks import slot_freed
    from apps.recalls.waitlist import OpenSlot

    open_slot = OpenSlot(
        practitioner_id=slot.practitioner_id,
        location_id=slot.location_id,
        appointment_type=slot.appointment_type,
        starts_at=slot.starts_at,
        ends_at=slot.ends_at,
        freed_appointment_id=slot.appointment_id,
        patient_id=slot.patient_id,
    )
    slot_freed.delay(str(slot.organization_id), open_slot.as_task_args(), slot.reason)


def queue_next_recalls(*, organization_id, appointment_id) -> None:
    """apps.appointments' on_completed (after the commit): the work goes to a Celery task."""
    from apps.recalls.tasks import appointment_completed

    appointment_completed.delay(str(organization_id), str(appointment_id))


def recalls_section(organization, patient_id) -> list[dict]:
    """The patient record's `recalls`: open ones first (soonest due first), then the last ten closed."""
    rows = (
        Recall.objects.for_org(organization)
        .filter(patient_id=patient_id)
        .select_related("recall_type")
        .order_by("due_date", "id")
    )
    open_rows = [r for r in rows if r.status in OPEN_RECALL_STATUSES]
    closed = sorted((r for r in rows if r.status not in OPEN_RECALL_STATUSES), key=lambda r: r.due_date, reverse=True)
    return [_recall_item(r) for r in open_rows + closed[:10]]


def _recall_item(recall: Recall) -> dict:
    return {
        "id": str(recall.id),
        "recallTypeId": str(recall.recall_type_id),
        "recallTypeName": recall.recall_type.name,
        "dueDate": recall.due_date.isoformat(),
        "status": recall.status,
        "appointmentId": str(recall.appointment_id) if recall.appointment_id else None,
    }


def waitlist_section(organization, patient_id) -> list[dict]:
    """The patient record's `waitlist`: the patient's entries still waiting or offered (no notes)."""
    rows = (
        WaitlistEntry.objects.for_org(organization)
        .filter(Q(patient_id=patient_id), Q(status__in=("waiting", "offered")))
        .order_by("priority", "created_at")
    )
    return [
        {
            "id": str(entry.id),
            "appointmentType": entry.appointment_type,
            "status": entry.status,
            "priority": entry.priority,
            "appointmentId": str(entry.appointment_id) if entry.appointment_id else None,
            "createdAt": datetime_string(entry.created_at),
        }
        for entry in rows
    ]
