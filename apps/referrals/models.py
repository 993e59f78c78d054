"""Referrals: a practice's referral programmes, the advocates (patients) who share them, the friends they refer
(each a lead of the practice) and the rewards earned when a referred friend reaches the programme's stage."""

from django.conf import settings
from django.db import models

from apps.core.models import TenantModel


class ReferralProgramme(TenantModel):
    name = models.CharField(max_length=120)
    active = models.BooleanField(default=True)
    reward_description = models.CharField(max_length=500, blank=True, default="")
    reward_amount = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    reward_currency = models.CharField(max_length=3, blank=True, default="")
    # The journey stage at which a referral counts as successful; None: when the referred friend's journey is won.
    success_stage = models.ForeignKey(
        "journeys.Stage", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    page_title = models.CharField(max_length=200, blank=True, default="")
    page_intro = models.TextField(blank=True, default="")
    consent_text = models.TextField(blank=True, default="")
    thank_you_text = models.TextField(blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["organization", "created_at"], name="referrals_prog_org_idx")]

    def __str__(self) -> str:
        return self.name


class Advocate(TenantModel):
    """A patient enrolled in a programme: the share token (friends' page and submit) and the status token (the
    advocate's own progress page). Rotating replaces both; the old ones stop at once."""

    programme = models.ForeignKey(ReferralProgramme, on_delete=models.CASCADE, related_name="advocates")
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    share_token = models.CharField(max_length=64, unique=True)
    status_token = models.CharField(max_length=64, unique=True)
    rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "programme", "patient"], name="referrals_advocate_programme_patient"
            )
        ]
        indexes = [models.Index(fields=["organization", "patient"], name="referrals_adv_org_patient_idx")]


class ReferralStatus(models.TextChoices):
    SUBMITTED = "submitted"  # a new lead, waiting to reach the programme's stage
    SUCCESSFUL = "successful"  # reached it: the reward is recorded
    DUPLICATE = "duplicate"  # the friend was already known to the practice: no new lead, no reward


class Referral(TenantModel):
    """One friend's submission through an advocate's share link. The patient token is the friend's own receipt:
    it reads this referral's state, nothing else."""

    programme = models.ForeignKey(ReferralProgramme, on_delete=models.CASCADE, related_name="referrals")
    advocate = models.ForeignKey(Advocate, on_delete=models.CASCADE, related_name="referrals")
    referred_patient = models.ForeignKey(
        "patients.Patient", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    initials = models.CharField(max_length=4, blank=True, default="")
    status = models.CharField(max_length=16, choices=ReferralStatus.choices, default=ReferralStatus.SUBMITTED)
    patient_token = models.CharField(max_length=64, unique=True)
    consent_given = models.BooleanField(default=False)
    succeeded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "referred_patient"], name="referrals_ref_org_patient_idx"),
            models.Index(fields=["organization", "advocate", "created_at"], name="referrals_ref_advocate_idx"),
        ]


class Reward(TenantModel):
    """The reward a successful referral earned its advocate, recorded once per referral; paid_at is set when the
    practice has given it (a voucher handed over, a credit applied), so the unpaid ones are its to-do list."""

    referral = models.OneToOneField(Referral, on_delete=models.CASCADE, related_name="reward")
    advocate = models.ForeignKey(Advocate, on_delete=models.CASCADE, related_name="rewards")
    description = models.CharField(max_length=500, blank=True, default="")
    amount = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True, default="")
    journey_id = models.UUIDField(null=True, blank=True)
    stage_id = models.UUIDField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    paid_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    payout_note = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["organization", "paid_at", "created_at"], name="referrals_reward_paid_idx")]
