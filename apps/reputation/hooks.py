"""The reputation area's part in erasing and merging a patient (registered in ReputationConfig.ready()). No events."""

from apps.reputation.models import Feedback, ReviewRequest


def erase_reputation_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the patient's review requests (their links stop at once) and private feedback go."""
    Feedback.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()
    ReviewRequest.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_reputation_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's requests and feedback become the survivor's."""
    ReviewRequest.objects.for_org(organization).filter(patient_id=duplicate.pk).update(patient_id=survivor.pk)
    Feedback.objects.for_org(organization).filter(patient_id=duplicate.pk).update(patient_id=survivor.pk)
