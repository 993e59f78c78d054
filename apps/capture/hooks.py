"""The capture area's part in erasing and merging a patient (registered in CaptureConfig.ready())."""

import logging

from django.db import transaction
from django.db.models import Q

from apps.capture.models import AttributionTouch, CaptureAttachment, CaptureSubmission, IntakeReviewItem
from apps.patients.public import ErasureResult, Patient

logger = logging.getLogger("apps.capture")


def erase_captures_of_patients(*, organization, patient_ids) -> ErasureResult:
    """Right to erasure: the submissions that made or matched these patients hold their personal data, so they go
    (with their files); so do the practice's submissions not made into a lead (parked, waiting, rejected) that
    carry one of their e-mail addresses or phone numbers as written. Touches and review items go with the patient
    row itself."""
    from apps.accounts.services.media import media_storage

    contacts = {
        value
        for row in Patient.objects.for_org(organization)
        .filter(id__in=patient_ids)
        .values_list("email", "phone_mobile", "phone_other")
        for value in row
        if value
    }
    unlinked = Q()
    for value in contacts:
        unlinked |= Q(fields__icontains=value)
    matches = Q(patient_id__in=patient_ids)
    if contacts:
        matches |= Q(patient__isnull=True) & unlinked
    submissions = CaptureSubmission.objects.for_org(organization).filter(matches)
    names = list(
        CaptureAttachment.objects.for_org(organization)
        .filter(submission__in=submissions)
        .values_list("storage_name", flat=True)
    )
    submissions.delete()
    if names:
        transaction.on_commit(lambda: _delete_files(media_storage(), names))
    return ErasureResult()


def _delete_files(storage, names: list[str]) -> None:
    for name in names:
        try:
            storage.delete(name)
        except OSError:
            logger.warning("capture attachment not deleted; remove it by hand")


def repoint_captures_to_survivor(*, organization, survivor, duplicate) -> None:
    for model in (CaptureSubmission, AttributionTouch, IntakeReviewItem):
        model.objects.for_org(organization).filter(patient_id=duplicate.pk).update(patient_id=survivor.pk)
