"""Reads of the referrals area."""

from django.db.models import Count, Q

from apps.referrals import tokens
from apps.referrals.models import Advocate, Referral, ReferralProgramme, ReferralStatus, Reward


def programmes_page(*, organization, limit: int, offset: int):
    rows = ReferralProgramme.objects.for_org(organization).order_by("-created_at", "id")
    return list(rows[offset : offset + limit]), rows.count()


def advocate_for_share_token(token: str) -> Advocate | None:
    """The advocate of an active programme with this share token, or None (any other token is None too)."""
    if tokens.kind_of(token) != tokens.SHARE:
        return None
    return (
        Advocate.objects.unscoped()
        .select_related("programme", "patient", "organization")
        .filter(share_token=token, programme__active=True, patient__archived_at__isnull=True)
        .first()
    )


def advocate_for_status_token(token: str) -> Advocate | None:
    if tokens.kind_of(token) != tokens.STATUS:
        return None
    return (
        Advocate.objects.unscoped()
        .select_related("programme", "patient", "organization")
        .filter(status_token=token)
        .first()
    )


def referral_for_patient_token(token: str) -> Referral | None:
    if tokens.kind_of(token) != tokens.PATIENT:
        return None
    return Referral.objects.unscoped().select_related("programme", "organization").filter(patient_token=token).first()


def advocate_progress(advocate: Advocate) -> dict:
    """The advocate's referrals (initials only) and rewards, newest first."""
    referrals = list(
        Referral.objects.for_org(advocate.organization_id).filter(advocate=advocate).order_by("-created_at", "id")
    )
    rewards = list(Reward.objects.for_org(advocate.organization_id).filter(advocate=advocate).order_by("-created_at"))
    return {"referrals": referrals, "rewards": rewards}


def patient_advocacies(*, organization, patient_id) -> list[Advocate]:
    return list(
        Advocate.objects.for_org(organization)
        .filter(patient_id=patient_id)
        .select_related("programme")
        .annotate(
            referral_count=Count("referrals", filter=~Q(referrals__status=ReferralStatus.DUPLICATE)),
            successful_count=Count("referrals", filter=Q(referrals__status=ReferralStatus.SUCCESSFUL)),
        )
        .order_by("created_at", "id")
    )


def patient_rewards(*, organization, advocate_ids) -> list[Reward]:
    return list(Reward.objects.for_org(organization).filter(advocate_id__in=advocate_ids).order_by("-created_at"))


def referral_of_patient(*, organization, patient_id) -> Referral | None:
    return (
        Referral.objects.for_org(organization)
        .filter(referred_patient_id=patient_id)
        .select_related("advocate", "programme")
        .order_by("created_at", "id")
        .first()
    )


def referrals_page(*, organization, programme, status: str | None, limit: int, offset: int):
    rows = Referral.objects.for_org(organization).filter(programme=programme).select_related("advocate", "reward")
    if status:
        rows = rows.filter(status=status)
    rows = rows.order_by("-created_at", "id")
    return list(rows[offset : offset + limit]), rows.count()


def rewards_page(*, organization, paid: bool | None, programme_id=None, limit: int, offset: int):
    """The practice's rewards, oldest unpaid first when filtering unpaid (the payout to-do list), else newest first."""
    rows = Reward.objects.for_org(organization).select_related("advocate", "referral")
    if programme_id:
        rows = rows.filter(advocate__programme_id=programme_id)
    if paid is not None:
        rows = rows.filter(paid_at__isnull=not paid)
    rows = rows.order_by("created_at", "id") if paid is False else rows.order_by("-created_at", "-id")
    return list(rows[offset : offset + limit]), rows.count()


def reward(*, organization, reward_id) -> Reward:
    return Reward.objects.for_org(organization).select_related("advocate", "referral").get(id=reward_id)
