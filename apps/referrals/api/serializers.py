"""Wire shapes of the referrals area (camelCase on the wire; snake_case here)."""

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from apps.core.fields import StrictBooleanField, TenantRelatedField, TextField
from apps.core.serializers import OffsetQuerySerializer, StrictSerializer, offset_page_serializer
from apps.journeys.public import Stage
from apps.referrals.models import Referral, ReferralProgramme, ReferralStatus
from apps.referrals.renderers import ProgressItemSerializer, PublicStatus, RewardSerializer


class ProgrammeSerializer(serializers.ModelSerializer):
    reward_amount = serializers.DecimalField(max_digits=10, decimal_places=2, allow_null=True, coerce_to_string=True)

    class Meta:
        model = ReferralProgramme
        ref_name = "ReferralProgramme"
        fields = [
            "id",
            "name",
            "active",
            "reward_description",
            "reward_amount",
            "reward_currency",
            "success_stage_id",
            "page_title",
            "page_intro",
            "consent_text",
            "thank_you_text",
            "created_at",
            "updated_at",
        ]


ProgrammePageSerializer = offset_page_serializer(ProgrammeSerializer, "ReferralProgrammePage")


class ProgrammeWriteSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=120)
    active = StrictBooleanField(required=False)
    reward_description = TextField(max_length=500, required=False, allow_blank=True)
    reward_amount = serializers.DecimalField(
        max_digits=10, decimal_places=2, min_value=0, required=False, allow_null=True
    )
    reward_currency = TextField(min_length=3, max_length=3, required=False, allow_blank=True)
    success_stage_id = TenantRelatedField(
        Stage,
        required=False,
        allow_null=True,
        source="success_stage",
        help_text="A journey stage of the practice (GET /pipelines/{id}/stages). A referral succeeds when the "
        "referred friend's journey reaches it (or a later stage of its pipeline, or is won). null: when won.",
    )
    page_title = TextField(max_length=200, required=False, allow_blank=True)
    page_intro = TextField(max_length=5000, required=False, allow_blank=True)
    consent_text = TextField(max_length=2000, required=False, allow_blank=True)
    thank_you_text = TextField(max_length=2000, required=False, allow_blank=True)

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value

    def validate_reward_currency(self, value):
        if value and not (value.isascii() and value.isalpha()):
            raise serializers.ValidationError("must be a three-letter ISO 4217 code")
        return value.upper()


class ProgrammeListQuerySerializer(OffsetQuerySerializer):
    pass


class ReferralListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=ReferralStatus.choices, required=False)


class ReferralRowSerializer(serializers.ModelSerializer):
    """A referral as the practice sees it (the friend is a patient record of the practice)."""

    advocate_patient_id = serializers.UUIDField(source="advocate.patient_id")
    reward = serializers.SerializerMethodField()

    class Meta:
        model = Referral
        ref_name = "ReferralRow"
        fields = [
            "id",
            "programme_id",
            "advocate_id",
            "advocate_patient_id",
            "referred_patient_id",
            "initials",
            "status",
            "consent_given",
            "created_at",
            "succeeded_at",
            "reward",
        ]

    @extend_schema_field(RewardSerializer(allow_null=True))
    def get_reward(self, referral):
        reward = getattr(referral, "reward", None)  # no reward yet: the reverse one-to-one raises AttributeError
        return RewardSerializer(reward).data if reward is not None else None


ReferralPageSerializer = offset_page_serializer(ReferralRowSerializer, "ReferralPage")


class RewardRowSerializer(RewardSerializer):
    """A reward as the practice sees it: whose it is, what earned it, and whether it has been given."""

    programme_id = serializers.UUIDField(source="advocate.programme_id")
    advocate_id = serializers.UUIDField()
    advocate_patient_id = serializers.UUIDField(source="advocate.patient_id")
    referral_id = serializers.UUIDField()
    referred_patient_id = serializers.UUIDField(source="referral.referred_patient_id", allow_null=True)
    paid_by_user_id = serializers.UUIDField(source="paid_by_id", allow_null=True)

    class Meta(RewardSerializer.Meta):
        ref_name = "ReferralRewardRow"
        fields = [
            *RewardSerializer.Meta.fields,
            "programme_id",
            "advocate_id",
            "advocate_patient_id",
            "referral_id",
            "referred_patient_id",
            "paid_by_user_id",
            "payout_note",
        ]


RewardPageSerializer = offset_page_serializer(RewardRowSerializer, "ReferralRewardPage")


class RewardListQuerySerializer(OffsetQuerySerializer):
    paid = serializers.BooleanField(
        required=False, allow_null=True, default=None, help_text="false: the rewards still to give; true: given."
    )
    programme_id = TenantRelatedField(ReferralProgramme, required=False, help_text="Only this programme's rewards.")


class RewardPaySerializer(StrictSerializer):
    note = TextField(max_length=500, required=False, allow_blank=True, help_text="How it was given (voucher no.…).")


class AdvocateIssueSerializer(StrictSerializer):
    programme_id = TenantRelatedField(ReferralProgramme, source="programme")
    rotate = StrictBooleanField(
        required=False, default=False, help_text="Issue new tokens; the previous ones stop at once."
    )


class AdvocateTokensSerializer(serializers.Serializer):
    advocate_id = serializers.UUIDField()
    programme_id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    share_token = serializers.CharField()
    share_url = serializers.CharField()
    status_token = serializers.CharField()
    status_url = serializers.CharField()
    rotated_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "ReferralAdvocateTokens"


# --- public ---------------------------------------------------------------------------------------------------------


class PageConfigSerializer(serializers.Serializer):
    practice_name = serializers.CharField()
    programme_name = serializers.CharField()
    advocate_first_name = serializers.CharField(help_text="The first name of the patient who shared the link.")
    page_title = serializers.CharField()
    page_intro = serializers.CharField()
    consent_text = serializers.CharField()
    thank_you_text = serializers.CharField()
    reward_description = serializers.CharField()

    class Meta:
        ref_name = "ReferralPageConfig"


class SubmitSerializer(StrictSerializer):
    first_name = TextField(min_length=1, max_length=100)
    last_name = TextField(max_length=100, required=False, allow_blank=True)
    email = serializers.EmailField(max_length=254, required=False, allow_blank=True)
    phone = TextField(max_length=32, required=False, allow_blank=True)
    marketing_consent = StrictBooleanField(
        required=False, default=False, help_text="The friend ticked the page's consent wording (consentText)."
    )

    def validate_first_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value.strip()

    def validate_phone(self, value):
        if value and not all(ch.isdigit() or ch in "+ -()" for ch in value):
            raise serializers.ValidationError("must be a phone number")
        return value.strip()

    def validate(self, attrs):
        if not (attrs.get("email") or attrs.get("phone")):
            raise serializers.ValidationError({"email": ["at least one of email or phone is required"]})
        return attrs


class SubmittedSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    patient_token = serializers.CharField(help_text="The friend's own token: GET /referral/{patientToken}/status.")
    thank_you_text = serializers.CharField()

    class Meta:
        ref_name = "ReferralSubmitted"


class AdvocateStatusSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text='Always "advocate" (a status token).')
    practice_name = serializers.CharField()
    programme_name = serializers.CharField()
    programme_active = serializers.BooleanField()
    reward_description = serializers.CharField()
    referrals = ProgressItemSerializer(many=True)
    rewards = RewardSerializer(many=True)

    class Meta:
        ref_name = "ReferralAdvocateStatus"


class FriendStatusSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text='Always "referred" (a patient token).')
    practice_name = serializers.CharField()
    programme_name = serializers.CharField()
    status = serializers.ChoiceField(choices=PublicStatus.choices)
    submitted_at = serializers.DateTimeField()

    class Meta:
        ref_name = "ReferralFriendStatus"


StatusPageSerializer = PolymorphicProxySerializer(
    component_name="ReferralStatusPage",
    serializers={"advocate": AdvocateStatusSerializer, "referred": FriendStatusSerializer},
    resource_type_field_name="kind",
)
