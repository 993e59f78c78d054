from rest_framework import serializers

from apps.accounts.models import Invitation
from apps.core.serializers import StrictSerializer

INVITATION_STATUSES = ["pending", "expired", "accepted", "rejected", "canceled"]


class PartnerPracticeCreateInput(StrictSerializer):
    name = serializers.CharField(max_length=200)
    country = serializers.RegexField(
        r"^[A-Za-z]{2}$", required=False, allow_blank=True, default="", help_text="ISO 3166-1 alpha-2."
    )
    owner_email = serializers.EmailField(max_length=254, help_text="Receives a 48-hour owner invitation.")


class PartnerOwnerInvitationInput(StrictSerializer):
    owner_email = serializers.EmailField(max_length=254)


class PartnerOwnerInvitationSummaryOutput(serializers.Serializer):
    email = serializers.EmailField()
    status = serializers.ChoiceField(choices=INVITATION_STATUSES, help_text="expired is derived from expiresAt.")
    expires_at = serializers.DateTimeField()
    delivery = serializers.ChoiceField(
        choices=Invitation.Delivery.values,
        help_text="The e-mail: pending (queued), publishing (being handed over), published (handed over), parked "
        "(given up after retries; POST the same address to send it again).",
    )


class PartnerOwnerInvitationOutput(PartnerOwnerInvitationSummaryOutput):
    id = serializers.UUIDField()
    organization_id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    last_sent_at = serializers.DateTimeField(allow_null=True, help_text="When the e-mail was last handed over.")


class PartnerPracticeOutput(serializers.Serializer):
    organization_id = serializers.UUIDField(help_text="Pass as MCP's practice argument to act inside it.")
    name = serializers.CharField()
    country = serializers.CharField(allow_blank=True)
    region = serializers.CharField()
    owner_joined = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    owner_invitation = PartnerOwnerInvitationSummaryOutput(
        allow_null=True, help_text="The newest owner invitation, or null."
    )


class PartnerOwnerInvitationSentOutput(serializers.Serializer):
    sent = serializers.BooleanField(help_text="false: e-mailed less than an hour ago or still queued; nobody mailed.")
    delivery = serializers.ChoiceField(choices=Invitation.Delivery.values)
    invitation = PartnerOwnerInvitationOutput()


class PartnerOwnerInvitationWithdrawnOutput(serializers.Serializer):
    canceled = serializers.IntegerField(help_text="How many open owner invitations were withdrawn.")


# --- setup status ---------------------------------------------------------------------------------------------


class SetupGuideStepOutput(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    done = serializers.BooleanField()
    available = serializers.BooleanField(help_text="false: this deployment does not offer the area yet.")


class SetupOwnerOutput(serializers.Serializer):
    joined = serializers.BooleanField()
    invitation = PartnerOwnerInvitationSummaryOutput(allow_null=True, help_text="The newest owner invitation.")


class SetupTeamOutput(serializers.Serializer):
    member_count = serializers.IntegerField()
    pending_invitations = serializers.IntegerField(help_text="Pending and not expired.")


class SetupAreaOutput(serializers.Serializer):
    available = serializers.BooleanField(help_text="false: this deployment does not offer the area.")
    configured = serializers.BooleanField()


class SetupPendingAgreementOutput(serializers.Serializer):
    id = serializers.UUIDField(help_text="Read it at GET /agreements/{id}; an owner accepts it there.")
    kind = serializers.CharField(help_text="terms or data_processing.")
    version = serializers.CharField()
    title = serializers.CharField()


class SetupAgreementsOutput(serializers.Serializer):
    available = serializers.BooleanField()
    items = SetupPendingAgreementOutput(
        many=True, help_text="Current agreement versions the practice has not accepted yet, terms first."
    )


class SetupStatusOutput(serializers.Serializer):
    guide = SetupGuideStepOutput(many=True)
    owner = SetupOwnerOutput()
    team = SetupTeamOutput()
    website = SetupAreaOutput()
    lead_ads = SetupAreaOutput()
    conversions = SetupAreaOutput()
    email_domains = SetupAreaOutput()
    pending_agreements = SetupAgreementsOutput()
