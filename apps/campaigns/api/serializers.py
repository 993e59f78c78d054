"""Wire shapes of templates and campaigns (camelCase on the wire; snake_case here)."""

import json

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.campaigns.models import Approval, CampaignStatus, Category, Channel, MessageTemplate
from apps.campaigns.selectors import RECIPIENT_STATUSES
from apps.campaigns.variables import VARIABLES
from apps.conversations.public import ChannelConnection
from apps.core.fields import (
    UNSTORABLE_PROBLEM,
    AwareDateTimeField,
    TenantRelatedField,
    TextField,
    has_unstorable_text,
)
from apps.core.serializers import (
    NonEmptyPatchSerializer,
    OffsetQuerySerializer,
    StrictSerializer,
    offset_page_serializer,
)
from apps.patients.public import Patient, PatientFiltersSerializer, SavedView

MAX_FILTERS_LENGTH = 4000
VARIABLE_HELP = "Variables, written {{name}}: " + "; ".join(f"{name} ({what})" for name, what in VARIABLES.items())

# --- templates ----------------------------------------------------------------------------------------------------


class TemplateSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    channel = serializers.ChoiceField(choices=Channel.choices)
    name = serializers.CharField()
    category = serializers.ChoiceField(choices=Category.choices)
    subject = serializers.CharField(help_text='E-mail only ("" otherwise).')
    body = serializers.CharField(help_text="Plain text: the SMS or message text, or the e-mail's text part.")
    html = serializers.CharField(help_text="E-mail only, optional: the HTML part (variables are HTML-escaped).")
    variables = serializers.ListField(child=serializers.CharField(), help_text="The variables used, in order.")
    provider_template_name = serializers.CharField(help_text="Messaging app only: the provider template's name.")
    language = serializers.CharField(help_text="Messaging app only: the provider template's language (e.g. en_US).")
    approval_status = serializers.ChoiceField(
        choices=Approval.choices,
        allow_null=True,
        help_text="Messaging app only (null otherwise): the provider's review; only approved templates are sent.",
    )
    approval_reason = serializers.CharField(help_text='Why the provider rejected it ("" otherwise).')
    approval_changed_at = serializers.DateTimeField(allow_null=True)
    created_by_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "MessageTemplate"

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["approval_status"] = instance.approval_status or None
        return data


TemplatePageSerializer = offset_page_serializer(TemplateSerializer, "MessageTemplatePage")

PROVIDER_NAME = RegexValidator(r"^[a-z0-9_]+$", "must be lower-case letters, digits and underscores")
LANGUAGE = RegexValidator(r"^[a-z]{2,3}(_[A-Z]{2})?$", "must be a language code such as en or en_US")


class TemplateWriteSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=120)
    category = serializers.ChoiceField(
        choices=Category.choices,
        help_text="marketing (the default): needs the channel's consent and carries the opt-out link; service: "
        "reminders and replies, only blocks apply.",
    )
    subject = TextField(max_length=998, allow_blank=True, help_text="E-mail: required. " + VARIABLE_HELP)
    body = TextField(
        min_length=1,
        max_length=100_000,
        help_text="At most 1,600 characters for sms and telephony_messaging, 100,000 for email (the sending "
        "pipeline's limits), 1,024 for messaging_app (WhatsApp's limit for a template's body). " + VARIABLE_HELP,
    )
    html = TextField(max_length=500_000, allow_blank=True, help_text="E-mail only, optional.")
    provider_template_name = TextField(
        max_length=512, allow_blank=True, validators=[PROVIDER_NAME], help_text="Messaging app: required."
    )
    language = TextField(max_length=16, allow_blank=True, validators=[LANGUAGE], help_text="Messaging app: required.")

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value


class TemplateCreateSerializer(TemplateWriteSerializer):
    channel = serializers.ChoiceField(choices=Channel.choices)

    def get_fields(self):
        fields = super().get_fields()
        for name in ("category", "subject", "html", "provider_template_name", "language"):
            fields[name].required = False
        fields["category"].default = Category.MARKETING
        return fields

    class Meta:
        ref_name = "MessageTemplateCreate"


class TemplateUpdateSerializer(NonEmptyPatchSerializer, TemplateWriteSerializer):
    class Meta:
        ref_name = "MessageTemplateUpdate"


class TemplateListQuerySerializer(OffsetQuerySerializer):
    channel = serializers.ChoiceField(choices=Channel.choices, required=False)
    category = serializers.ChoiceField(choices=Category.choices, required=False)
    approval_status = serializers.ChoiceField(choices=Approval.choices, required=False)


class TemplateApprovalSerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=Approval.choices)
    reason = TextField(max_length=500, allow_blank=True, required=False, default="", help_text="For a rejection.")

    class Meta:
        ref_name = "MessageTemplateApproval"


class TemplatePreviewQuerySerializer(StrictSerializer):
    patient_id = TenantRelatedField(Patient, help_text="The patient whose values fill the variables.")


class ProviderTemplateSerializer(serializers.Serializer):
    name = serializers.CharField()
    language = serializers.CharField()
    parameters = serializers.ListField(child=serializers.CharField())

    class Meta:
        ref_name = "ProviderTemplateMessage"


class TemplatePreviewSerializer(serializers.Serializer):
    subject = serializers.CharField()
    body = serializers.CharField()
    html = serializers.CharField()
    provider_template = ProviderTemplateSerializer(allow_null=True, source="template")
    missing_variables = serializers.ListField(child=serializers.CharField())

    class Meta:
        ref_name = "MessageTemplatePreview"


class TemplateSendSerializer(StrictSerializer):
    patient_id = TenantRelatedField(Patient, source="patient")
    connection_id = TenantRelatedField(ChannelConnection, source="connection")

    class Meta:
        ref_name = "MessageTemplateSend"


class TemplateSentSerializer(serializers.Serializer):
    message_id = serializers.UUIDField()
    conversation_id = serializers.UUIDField()
    purpose = serializers.ChoiceField(choices=["marketing", "service"])
    status = serializers.CharField(help_text="queued: the pipeline sends it and reports through the message.")

    class Meta:
        ref_name = "MessageTemplateSent"


# --- campaigns ----------------------------------------------------------------------------------------------------


def unstorable_key(value: dict) -> str | None:
    """The top-level key of `value` under which some string (a key or a value, at any depth) cannot be stored."""
    return next((key for key, item in value.items() if has_unstorable_text([key, item])), None)


@extend_schema_field(PatientFiltersSerializer)
class FiltersField(serializers.DictField):
    """PatientFilters, validated as the patients list validates them and kept as sent (a JSON column: every string
    in it must be storable, customFields' free-form keys and values included)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        bad = unstorable_key(value)
        if bad is not None:
            if has_unstorable_text(bad):  # the key itself: not echoed back
                raise serializers.ValidationError(f"filter names: {UNSTORABLE_PROBLEM}")
            raise serializers.ValidationError({bad: [UNSTORABLE_PROBLEM]})
        if len(json.dumps(value)) > MAX_FILTERS_LENGTH:
            raise serializers.ValidationError(f"must be at most {MAX_FILTERS_LENGTH} characters as JSON")
        inner = PatientFiltersSerializer(data=value)
        if not inner.is_valid():
            raise serializers.ValidationError(inner.errors)
        return value


class AudienceSerializer(StrictSerializer):
    saved_view_id = TenantRelatedField(
        SavedView, required=False, help_text="A saved view of yours or a shared one: its filters at launch."
    )
    filters = FiltersField(required=False, help_text="PatientFilters (as GET /patients takes them).")

    class Meta:
        ref_name = "CampaignAudience"

    def validate(self, attrs):
        if ("saved_view_id" in attrs) == ("filters" in attrs):
            raise serializers.ValidationError("send exactly one of savedViewId and filters")
        return attrs


class CampaignWriteSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=200)
    connection_id = TenantRelatedField(
        ChannelConnection, source="connection", help_text="The channel connection it is sent from."
    )
    template_id = TenantRelatedField(
        MessageTemplate, source="template", help_text="A marketing template of the connection's channel."
    )
    audience = AudienceSerializer()
    scheduled_at = AwareDateTimeField(
        required=False, allow_null=True, help_text="When sending starts; null or a past time: at launch."
    )

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value


class CampaignCreateSerializer(CampaignWriteSerializer):
    class Meta:
        ref_name = "CampaignCreate"


class CampaignUpdateSerializer(NonEmptyPatchSerializer, CampaignWriteSerializer):
    class Meta:
        ref_name = "CampaignUpdate"


class AudienceOutSerializer(serializers.Serializer):
    saved_view_id = serializers.UUIDField(allow_null=True)
    filters = serializers.DictField(allow_null=True, help_text="PatientFilters given inline (null with a view).")

    class Meta:
        ref_name = "CampaignAudienceOut"


class CampaignSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=CampaignStatus.choices)
    channel = serializers.ChoiceField(choices=Channel.choices, source="connection.kind")
    connection_id = serializers.UUIDField()
    template_id = serializers.UUIDField(allow_null=True)
    audience = serializers.SerializerMethodField()
    scheduled_at = serializers.DateTimeField(allow_null=True)
    hourly_limit = serializers.IntegerField(allow_null=True)
    daily_limit = serializers.IntegerField(allow_null=True)
    launched_at = serializers.DateTimeField(allow_null=True)
    launched_by_id = serializers.UUIDField(allow_null=True)
    paused_at = serializers.DateTimeField(allow_null=True)
    pause_reason = serializers.CharField(
        allow_null=True, help_text="CONNECTION_UNAVAILABLE when the service paused it; null when a person did."
    )
    next_release_at = serializers.DateTimeField(
        allow_null=True,
        source="release_after",
        help_text="When releasing goes on: the end of the practice's quiet hours, or the next hour or day (pacing).",
    )
    completed_at = serializers.DateTimeField(allow_null=True)
    cancelled_at = serializers.DateTimeField(allow_null=True)
    created_by_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Campaign"

    @extend_schema_field(AudienceOutSerializer)
    def get_audience(self, campaign):
        return {"saved_view_id": campaign.saved_view_id, "filters": campaign.audience_filters}

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["pause_reason"] = instance.pause_reason or None
        if instance.status not in (CampaignStatus.SENDING, CampaignStatus.SCHEDULED):
            data["next_release_at"] = None
        return data


class CampaignTotalsSerializer(serializers.Serializer):
    recipients = serializers.IntegerField()
    pending = serializers.IntegerField()
    queued = serializers.IntegerField()
    sent = serializers.IntegerField()
    delivered = serializers.IntegerField()
    failed = serializers.IntegerField()
    skipped = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    unsubscribed = serializers.IntegerField()
    released = serializers.IntegerField(help_text="Released, and the message was since erased.")

    class Meta:
        ref_name = "CampaignTotals"


class CampaignDetailSerializer(CampaignSerializer):
    totals = CampaignTotalsSerializer()
    skipped_reasons = serializers.DictField(child=serializers.IntegerField(), help_text="Skipped recipients by reason.")

    class Meta:
        ref_name = "CampaignDetail"


CampaignPageSerializer = offset_page_serializer(CampaignSerializer, "CampaignPage")


class CampaignListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=CampaignStatus.choices, required=False)


class LaunchSerializer(StrictSerializer):
    hourly_limit = serializers.IntegerField(
        min_value=1, max_value=1_000_000, required=False, allow_null=True, help_text="At most this many per hour."
    )
    daily_limit = serializers.IntegerField(
        min_value=1, max_value=10_000_000, required=False, allow_null=True, help_text="At most this many per day."
    )

    class Meta:
        ref_name = "CampaignLaunch"


class RecipientListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=RECIPIENT_STATUSES, required=False)


class RecipientSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    patient_name = serializers.CharField()
    address = serializers.CharField(help_text='The address on the channel as resolved at launch ("" when none).')
    status = serializers.ChoiceField(choices=RECIPIENT_STATUSES)
    skip_reason = serializers.CharField(allow_null=True)
    message_id = serializers.UUIDField(allow_null=True)
    error_code = serializers.CharField(allow_null=True, help_text="A failed message's reason or provider code.")
    released_at = serializers.DateTimeField(allow_null=True)
    unsubscribed_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "CampaignRecipient"

    def to_representation(self, row):
        name = f"{row['patient__first_name']} {row['patient__last_name'] or ''}".strip()
        return {
            "id": str(row["id"]),
            "patient_id": str(row["patient_id"]),
            "patient_name": name,
            "address": row["address"],
            "status": row["display"],
            "skip_reason": row["skip_reason"] or None,
            "message_id": str(row["message_id"]) if row["message_id"] else None,
            "error_code": row["message__error_code"] or None,
            "released_at": serializers.DateTimeField().to_representation(row["released_at"])
            if row["released_at"]
            else None,
            "unsubscribed_at": serializers.DateTimeField().to_representation(row["unsubscribed_at"])
            if row["unsubscribed_at"]
            else None,
        }


RecipientPageSerializer = offset_page_serializer(RecipientSerializer, "CampaignRecipientPage")


class TestSendSerializer(StrictSerializer):
    patient_id = TenantRelatedField(
        Patient, required=False, help_text="Fill the variables with this patient's values (sample values otherwise)."
    )

    class Meta:
        ref_name = "CampaignTestSend"


class TestSentSerializer(serializers.Serializer):
    channel = serializers.ChoiceField(choices=Channel.choices)
    to = serializers.CharField(help_text="Your own address the test went to.")
    subject = serializers.CharField(help_text="E-mail: the subject, marked [Test].")

    class Meta:
        ref_name = "CampaignTestSent"


class UnsubscribedSerializer(serializers.Serializer):
    unsubscribed = serializers.BooleanField()
    channel = serializers.ChoiceField(choices=["sms", "whatsapp", "email"])

    class Meta:
        ref_name = "Unsubscribed"
