"""The journeys area's part in erasing and merging a patient (registered in JourneysConfig.ready())."""

from django.utils import timezone

from apps.journeys.models import Journey, JourneyStatus, Stage, StageKind

MERGED_REASON = "Merged into another patient record"


def erase_journeys_of_patients(*, organization, patient_ids: list) -> None:
    """Erasure deletes the patients' journeys in the caller's transaction."""
    Journey.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_journeys_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merging moves the duplicate's journeys to the survivor. Where both have an open journey for the same treatment,
    the duplicate's is closed as lost (reason: merged) first, so the survivor keeps one open journey per treatment."""
    journeys = Journey.objects.for_org(organization)
    clashing = journeys.filter(
        patient=duplicate,
        status=JourneyStatus.OPEN,
        treatment_id__in=journeys.filter(patient=survivor, status=JourneyStatus.OPEN).values("treatment_id"),
    ).select_for_update()
    now = timezone.now()
    for journey in clashing:
        lost_stage = Stage.objects.for_org(organization).get(pipeline_id=journey.pipeline_id, kind=StageKind.LOST)
        journey.last_open_stage_id = journey.stage_id
        journey.stage, journey.status, journey.lost_at, journey.stage_entered_at = lost_stage, "lost", now, now
        journey.lost_reason = MERGED_REASON
        journey.save()
    journeys.filter(patient=duplicate).update(patient=survivor, updated_at=now)
