"""The deposits area's part in erasing and merging a patient (registered in DepositsConfig.ready())."""

from django.utils import timezone

from apps.deposits.models import DepositRequest


def erase_deposits_of_patients(*, organization, patient_ids) -> None:
    """Right to erasure: the patients' deposit requests go with them, in the erasing transaction (no event: the
    catalogue has no deletion event, and the erasure leaves no trace). Money taken stays at the payment platform."""
    DepositRequest.objects.for_org(organization).filter(patient_id__in=patient_ids).delete()


def repoint_deposits_to_survivor(*, organization, survivor, duplicate) -> None:
    """Merge: the duplicate's deposit requests now belong to the survivor. No event: the catalogue has no
    deposit_request.updated, and the request's status did not change."""
    DepositRequest.objects.for_org(organization).filter(patient_id=duplicate.pk).update(
        patient_id=survivor.pk, updated_at=timezone.now()
    )
