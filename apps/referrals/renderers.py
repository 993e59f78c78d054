"""Wire shapes shared by the routes and the patient embed (snake_case; the renderer camelizes)."""

from django.conf import settings
from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.referrals.models import Advocate, Referral, ReferralStatus, Reward


def share_url(advocate: Advocate) -> str:
    return f"{settings.SVC_BASE_URL}/referral/{advocate.share_token}"


def status_url(advocate: Advocate) -> str:
    return f"{settings.SVC_BASE_URL}/referral/{advocate.status_token}/status"


class RewardSerializer(serializers.ModelSerializer):
    amount = serializers.DecimalField(max_digits=10, decimal_places=2, allow_null=True, coerce_to_string=True)

    class Meta:
        model = Reward
        ref_name = "ReferralReward"
        fields = ["id", "description", "amount", "currency", "created_at", "paid_at"]


class AdvocacySerializer(serializers.Serializer):
    advocate_id = serializers.UUIDField(source="id")
    programme_id = serializers.UUIDField()
    programme_name = serializers.CharField(source="programme.name")
    programme_active = serializers.BooleanField(source="programme.active")
    share_url = serializers.SerializerMethodField()
    status_url = serializers.SerializerMethodField()
    referrals = serializers.IntegerField(source="referral_count", min_value=0)
    successful = serializers.IntegerField(source="successful_count", min_value=0)

    class Meta:
        ref_name = "ReferralAdvocacy"

    def get_share_url(self, advocate) -> str:
        return share_url(advocate)

    def get_status_url(self, advocate) -> str:
        return status_url(advocate)


class ReferredBySerializer(serializers.Serializer):
    referral_id = serializers.UUIDField(source="id")
    programme_id = serializers.UUIDField()
    advocate_patient_id = serializers.UUIDField(source="advocate.patient_id")
    status = serializers.ChoiceField(choices=ReferralStatus.choices)
    submitted_at = serializers.DateTimeField(source="created_at")
    succeeded_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "ReferralReferredBy"


class PatientReferralSerializer(serializers.Serializer):
    """GET /patients/{id}?embed=referral: the patient as advocate (programmes, links, counts, rewards) and as a
    referred friend (who referred them)."""

    advocacies = AdvocacySerializer(many=True)
    rewards = RewardSerializer(many=True)
    referred_by = ReferredBySerializer(allow_null=True)

    class Meta:
        ref_name = "PatientReferral"


class PublicStatus(models.TextChoices):
    """A referral's status on the public pages."""

    SUBMITTED = "submitted"
    SUCCESSFUL = "successful"


def public_status(referral: Referral) -> str:
    """What the public pages say: a friend the practice already knew shows as submitted, so a page never tells
    whether someone is a patient of the practice."""
    return PublicStatus.SUCCESSFUL if referral.status == ReferralStatus.SUCCESSFUL else PublicStatus.SUBMITTED


class ProgressItemSerializer(serializers.ModelSerializer):
    """One referral as its advocate sees it: initials, never names or contact details."""

    submitted_at = serializers.DateTimeField(source="created_at")
    status = serializers.SerializerMethodField()

    class Meta:
        model = Referral
        ref_name = "ReferralProgressItem"
        fields = ["initials", "status", "submitted_at", "succeeded_at"]

    @extend_schema_field(serializers.ChoiceField(choices=PublicStatus.choices))
    def get_status(self, referral) -> str:
        return public_status(referral)
