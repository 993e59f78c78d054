"""The dialer's part in erasing and merging a patient (registered in DialerConfig.ready())."""

from django.utils import timezone

from apps.dialer import recordings
from apps.dialer.models import Call, Recording
from apps.patients.public import ErasureResult


def erase_calls_of_patients(*, organization, patient_ids) -> ErasureResult:
    """Right to erasure, inside the erasure's transaction: the patients' calls go, with their voicemails,
    recordings and whatever other areas keep about a call (AI Voice transcripts cascade with it); each recording's
    stored file and the provider's copy are scheduled for deletion after the commit (recordingsScheduled)."""
    patient_ids = list(patient_ids)
    found = list(
        Recording.objects.for_org(organization)
        .select_for_update(of=("self",))  # a copy recording its outcome finishes first
        .select_related("call")
        .filter(call__patient_id__in=patient_ids)
        .order_by("id")
    )
    scheduled = recordings.schedule_deletion(organization=organization, recordings=found)
    Call.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()
    return ErasureResult(recordings_scheduled=scheduled)


def repoint_calls_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's calls are the survivor's (no event: the catalogue has no call events)."""
    Call.objects.for_org(organization).filter(patient_id=duplicate.pk).update(
        patient_id=survivor.pk, updated_at=timezone.now()
    )
