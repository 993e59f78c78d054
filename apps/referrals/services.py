"""Writes of the referrals area: programmes, advocates (their tokens) and friends' submissions."""

from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from rest_framework.fields import DateTimeField

from apps.core.errors import ApiError, ValidationFailed
from apps.core.writes import assign_fields
from apps.journeys.public import journey_create
from apps.patients.public import (
    MarketingConsent,
    Patient,
    PatientMerged,
    consent_record,
    lead_source_named,
    patient_create,
    patient_match,
)
from apps.patients.public import Status as PatientStatus
from apps.referrals import tokens
from apps.referrals.models import Advocate, Referral, ReferralProgramme, ReferralStatus, Reward

LEAD_SOURCE_NAME = "Referral"
CONSENT_SOURCE = "referral_page"
PROGRAMME_FIELDS = (
    "name",
    "active",
    "reward_description",
    "reward_amount",
    "reward_currency",
    "success_stage",
    "page_title",
    "page_intro",
    "consent_text",
    "thank_you_text",
)


# --- programmes -----------------------------------------------------------------------------------------------------


def _check_stage(data: dict) -> None:
    stage = data.get("success_stage")
    if stage is not None and stage.archived_at is not None:
        raise ValidationFailed.for_field("successStageId", "the stage is archived")


@transaction.atomic
def programme_create(*, organization, data: dict) -> ReferralProgramme:
    _check_stage(data)
    programme = ReferralProgramme(organization=organization)
    assign_fields(programme, data, fields=PROGRAMME_FIELDS)
    programme.save()
    return programme


@transaction.atomic
def programme_update(*, organization, programme: ReferralProgramme, data: dict) -> ReferralProgramme:
    _check_stage(data)
    programme = ReferralProgramme.objects.for_org(organization).select_for_update().get(id=programme.id)
    if assign_fields(programme, data, fields=PROGRAMME_FIELDS):
        programme.save()
    return programme


# --- advocates ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Issued:
    advocate: Advocate
    created: bool


class ProgrammeInactive(ApiError):
    status_code = 409
    code = "REFERRAL_PROGRAMME_INACTIVE"
    message = "The referral programme is not active."


@transaction.atomic
def advocate_issue(*, organization, patient: Patient, programme: ReferralProgramme, rotate: bool = False) -> Issued:
    """The patient's advocate tokens for the programme: made on first call, returned as they are on repeats, new
    ones (the old stop at once) with `rotate`."""
    patient = Patient.objects.for_org(organization).select_for_update().get(id=patient.id)
    if patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)
    if not programme.active:
        raise ProgrammeInactive()
    advocate = Advocate.objects.for_org(organization).filter(programme=programme, patient=patient).first()
    if advocate is None:
        advocate = Advocate.objects.create(
            organization=organization,
            programme=programme,
            patient=patient,
            share_token=tokens.new_token(tokens.SHARE),
            status_token=tokens.new_token(tokens.STATUS),
        )
        return Issued(advocate, True)
    if rotate:
        advocate.share_token = tokens.new_token(tokens.SHARE)
        advocate.status_token = tokens.new_token(tokens.STATUS)
        advocate.rotated_at = timezone.now()
        advocate.save(update_fields=["share_token", "status_token", "rotated_at", "updated_at"])
    return Issued(advocate, False)


# --- a friend's submission (public) -------------------------------------------------------------------------------


def initials_of(first_name: str, last_name: str) -> str:
    return "".join(part.strip()[:1].upper() for part in (first_name, last_name) if part and part.strip())


def _lock_submissions(organization) -> None:
    """One submission of the practice at a time, to the commit: two identical friends posted at the same instant
    must not both pass the known-patient check (nor both create the Referral lead source)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"referral:{organization.pk}"])


@transaction.atomic
def referral_submit(*, advocate: Advocate, data: dict) -> Referral:
    """A friend's details → a lead of the practice attributed to the advocate (lead source "Referral", referred by
    the advocate, a journey opened) with the consent the friend gave recorded as evidence. A friend the practice
    already knows (same e-mail or mobile) makes no new lead and earns no reward; the answer is the same."""
    organization = advocate.organization
    first, last = data["first_name"], data.get("last_name") or ""
    email, phone = data.get("email") or None, data.get("phone") or None
    referral = Referral(
        organization=organization,
        programme=advocate.programme,
        advocate=advocate,
        initials=initials_of(first, last),
        patient_token=tokens.new_token(tokens.PATIENT),
        consent_given=bool(data.get("marketing_consent")),
    )
    _lock_submissions(organization)
    known = patient_match(organization=organization, email=email, phone=phone)
    if known is not None:
        referral.status = ReferralStatus.DUPLICATE
        referral.consent_given = False
        referral.save()
        return referral
    patient = patient_create(
        organization=organization,
        user=None,
        data={
            "first_name": first,
            "last_name": last,
            "email": email,
            "phone_mobile": phone,
            "status": PatientStatus.LEAD,
            "lead_source_id": lead_source_named(organization, LEAD_SOURCE_NAME),
            "referred_by_patient_id": advocate.patient,
        },
    )
    journey_create(organization=organization, user=None, data={"patient": patient})
    if referral.consent_given:
        programme = advocate.programme
        evidence = (
            f"Ticked on the referral page of programme {programme.id} (shared by advocate {advocate.id}) at "
            f"{timezone.now().isoformat()}. Wording shown: {programme.consent_text or '(default wording)'}"
        )
        channels = [MarketingConsent.Channel.EMAIL] if email else []
        channels += [MarketingConsent.Channel.SMS] if phone else []
        for channel in channels:
            consent_record(
                organization=organization,
                user=None,
                patient=patient,
                channel=channel,
                status=MarketingConsent.State.GRANTED,
                source=CONSENT_SOURCE,
                evidence=evidence,
            )
    referral.referred_patient = patient
    try:
        with transaction.atomic():
            referral.save()
    except IntegrityError:  # a patient token collision (never in practice): one more draw
        referral.patient_token = tokens.new_token(tokens.PATIENT)
        referral.save()
    return referral


# --- rewards: paid out ----------------------------------------------------------------------------------------------


class RewardAlreadyPaid(ApiError):
    status_code = 409
    code = "REFERRAL_REWARD_ALREADY_PAID"
    message = "The reward has already been marked paid."


@transaction.atomic
def reward_mark_paid(*, organization, reward_id, user, note: str = "") -> Reward:
    """Record that the practice gave the advocate the reward. Once: a second mark is 409 and changes nothing."""
    reward = Reward.objects.for_org(organization).select_for_update().get(id=reward_id)
    if reward.paid_at is not None:
        raise RewardAlreadyPaid(details={"paidAt": DateTimeField().to_representation(reward.paid_at)})
    reward.paid_at = timezone.now()
    reward.paid_by = user if getattr(user, "is_authenticated", False) else None
    reward.payout_note = note
    reward.save(update_fields=["paid_at", "paid_by", "payout_note", "updated_at"])
    return reward
