"""Reads of the deposits area."""

from django.db.models import QuerySet

from apps.deposits.models import DepositRequest


def deposits_filtered(*, organization, patient_id=None, journey_id=None, status=None) -> QuerySet[DepositRequest]:
    deposits = DepositRequest.objects.for_org(organization)
    if patient_id is not None:
        deposits = deposits.filter(patient_id=patient_id)
    if journey_id is not None:
        deposits = deposits.filter(journey_id=journey_id)
    if status:
        deposits = deposits.filter(status=status)
    return deposits


def deposit_page(*, organization, limit: int, offset: int, **filters) -> tuple[list[DepositRequest], int]:
    matching = deposits_filtered(organization=organization, **filters)
    total = matching.count()
    return list(matching.order_by("-created_at", "-id")[offset : offset + limit]), total


def deposit_get(*, organization, deposit_id) -> DepositRequest | None:
    return DepositRequest.objects.for_org(organization).filter(id=deposit_id).first()


EMBED_LIMIT = 50


def deposits_of_patient(*, organization, patient_id, limit: int = EMBED_LIMIT) -> list[DepositRequest]:
    return list(
        DepositRequest.objects.for_org(organization)
        .filter(patient_id=patient_id)
        .order_by("-created_at", "-id")[:limit]
    )
