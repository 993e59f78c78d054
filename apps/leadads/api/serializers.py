"""Wire shapes of native lead ads and POST /leads (camelCase on the wire; snake_case here)."""

from django.core.validators import validate_email
from rest_framework import serializers

from apps.capture.public import ATTRIBUTION_FIELDS
from apps.core.fields import StrictBooleanField, TenantRelatedField, TextField
from apps.core.serializers import (
    OffsetQuerySerializer,
    StrictSerializer,
    offset_page_serializer,
)
from apps.journeys.public import Treatment
from apps.leadads.models import LeadAdConnection, LeadAdSubmission, Platform, PushedLead
from apps.leadads.services import callback_url
from apps.patients.public import LeadSource, Location

MAX_CUSTOM_FIELDS = 50


def _printable_id(value: str, what: str) -> str:
    value = value.strip()
    if not value or not value.isprintable():
        raise serializers.ValidationError(f"must be the {what} (printable characters)")
    return value


# --- connections ----------------------------------------------------------------------------------------------------


class ConnectionSerializer(serializers.ModelSerializer):
    lead_source_id = serializers.UUIDField(allow_null=True)
    default_treatment_id = serializers.UUIDField(allow_null=True)
    location_id = serializers.UUIDField(allow_null=True)
    has_page_token = serializers.SerializerMethodField()
    authorized_user_id = serializers.CharField(source="authorized_by_ref")
    callback_url = serializers.SerializerMethodField(
        help_text="Where the platform posts leads (the social and short-video platforms: one URL for every "
        "practice). Search ads: null here; the URL with its routing token is shown once, when made or regenerated."
    )

    class Meta:
        model = LeadAdConnection
        ref_name = "LeadAdConnection"
        fields = [
            "id",
            "platform",
            "name",
            "external_id",
            "health",
            "health_reason",
            "health_changed_at",
            "has_page_token",
            "authorized_user_id",
            "lead_source_id",
            "default_treatment_id",
            "location_id",
            "callback_url",
            "last_lead_at",
            "disconnected_at",
            "created_at",
            "updated_at",
        ]

    def get_has_page_token(self, connection) -> bool:
        return bool(connection.page_token_encrypted)

    def get_callback_url(self, connection) -> str | None:
        return callback_url(connection.platform)


class ConnectionCreatedSerializer(ConnectionSerializer):
    routing_token = serializers.CharField(help_text="Shown once; only its SHA-256 is kept.")
    google_key = serializers.CharField(
        allow_null=True, help_text="Search ads: the key to set in the ad account's lead form webhook; shown once."
    )
    callback_url = serializers.CharField(allow_null=True)

    class Meta(ConnectionSerializer.Meta):
        ref_name = "LeadAdConnectionCreated"
        fields = [*ConnectionSerializer.Meta.fields, "routing_token", "google_key"]


ConnectionPageSerializer = offset_page_serializer(ConnectionSerializer, "LeadAdConnectionPage")


class ConnectionListQuerySerializer(OffsetQuerySerializer):
    platform = serializers.ChoiceField(choices=Platform.choices, required=False)


class _ConnectionFields(StrictSerializer):
    name = TextField(min_length=1, max_length=120)
    page_access_token = TextField(
        min_length=1, max_length=2000, required=False, write_only=True,
        help_text="Social platform: the page access token leads are fetched with (kept encrypted, never returned).",
    )  # fmt: skip
    authorized_user_id = TextField(
        max_length=64, required=False, allow_blank=True,
        help_text="Social platform: the app-scoped id of the person who granted the page token (deauthorization "
        "and data-deletion requests name it).",
    )  # fmt: skip
    lead_source_id = TenantRelatedField(LeadSource, allow_archived=False, required=False, allow_null=True,
                                        source="lead_source")  # fmt: skip
    default_treatment_id = TenantRelatedField(Treatment, required=False, allow_null=True, source="default_treatment")
    location_id = TenantRelatedField(Location, allow_archived=False, required=False, allow_null=True, source="location")

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value.strip()

    def validate_default_treatment_id(self, value):
        if value is not None and not value.active:
            raise serializers.ValidationError("is archived")
        return value


class ConnectionCreateSerializer(_ConnectionFields):
    class Meta:
        ref_name = "LeadAdConnectionCreate"

    platform = serializers.ChoiceField(choices=Platform.choices)
    external_id = TextField(
        min_length=1, max_length=64,
        help_text="The page id (social), the ad account's customer id (search) or the advertiser id (short-video).",
    )  # fmt: skip

    def validate_external_id(self, value):
        return _printable_id(value, "page, ad account or advertiser id")

    def validate(self, attrs):
        platform = attrs["platform"]
        if platform == Platform.META_PLATFORM and not attrs.get("page_access_token"):
            raise serializers.ValidationError({"pageAccessToken": ["is required for the social platform"]})
        if platform != Platform.META_PLATFORM:
            for name, wire in (("page_access_token", "pageAccessToken"), ("authorized_user_id", "authorizedUserId")):
                if attrs.get(name):
                    raise serializers.ValidationError({wire: ["is only for the social platform"]})
        return attrs


class ConnectionUpdateSerializer(_ConnectionFields):
    class Meta:
        ref_name = "LeadAdConnectionUpdate"

    name = TextField(min_length=1, max_length=120, required=False)
    regenerate_routing_token = StrictBooleanField(required=False, default=False)
    regenerate_google_key = StrictBooleanField(required=False, default=False, help_text="Search ads only.")

    def validate(self, attrs):
        flags = ("regenerate_routing_token", "regenerate_google_key")
        if not (set(attrs) - set(flags)) and not any(attrs.get(flag) for flag in flags):
            raise serializers.ValidationError("send at least one field to change")
        connection = self.context.get("connection")
        if connection is not None and connection.platform != Platform.META_PLATFORM:
            for name, wire in (("page_access_token", "pageAccessToken"), ("authorized_user_id", "authorizedUserId")):
                if attrs.get(name):
                    raise serializers.ValidationError({wire: ["is only for the social platform"]})
        if connection is not None and connection.platform != Platform.SEARCH_ADS and attrs.get("regenerate_google_key"):
            raise serializers.ValidationError({"regenerateGoogleKey": ["is only for search ads"]})
        return attrs


# --- submissions ----------------------------------------------------------------------------------------------------


class SubmissionSerializer(serializers.ModelSerializer):
    connection_id = serializers.UUIDField()
    patient_id = serializers.UUIDField(allow_null=True)
    resolved_by_id = serializers.UUIDField(allow_null=True)
    fields = serializers.DictField(help_text="The lead's answers under the capture's field names ({} once erased).")

    class Meta:
        model = LeadAdSubmission
        ref_name = "LeadAdSubmission"
        fields = [
            "id",
            "platform",
            "connection_id",
            "status",
            "reason",
            "is_test",
            "lead_ref",
            "form_ref",
            "campaign_ref",
            "ad_ref",
            "fields",
            "patient_id",
            "patient_created",
            "journey_id",
            "submitted_at",
            "processed_at",
            "resolved_by_id",
            "resolved_at",
            "erased_at",
            "created_at",
        ]


SubmissionPageSerializer = offset_page_serializer(SubmissionSerializer, "LeadAdSubmissionPage")


class SubmissionListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=LeadAdSubmission.Status.choices, required=False)
    connection_id = TenantRelatedField(LeadAdConnection, required=False, source="connection")


class ResolveSerializer(StrictSerializer):
    class Meta:
        ref_name = "LeadAdSubmissionResolve"

    action = serializers.ChoiceField(
        choices=[("create_lead", "create_lead"), ("dismiss", "dismiss")],
        help_text="create_lead: make the lead (with the corrections below, where the lead's own contact details "
        "were unusable) → processed; dismiss → failed (reason dismissed).",
    )
    first_name = TextField(max_length=200, required=False, allow_blank=True)
    last_name = TextField(max_length=200, required=False, allow_blank=True)
    email = TextField(max_length=254, required=False, allow_blank=True)
    phone = TextField(max_length=40, required=False, allow_blank=True)


# --- POST /leads ----------------------------------------------------------------------------------------------------


class AttributionField(serializers.DictField):
    """utm_* values, advertising click ids (gclid, fbclid, ttclid, …), landingUrl and referrer."""

    child = TextField(max_length=2048, allow_blank=True)

    def to_internal_value(self, data):
        values = super().to_internal_value(data)
        from apps.core.naming import to_snake

        cleaned = {}
        for key, value in values.items():
            name = to_snake(key) if key not in ATTRIBUTION_FIELDS else key
            if name not in ATTRIBUTION_FIELDS:
                raise serializers.ValidationError(f"{key!r} is not a marketing parameter (utm_*, a click id, "
                                                  "landingUrl or referrer)")  # fmt: skip
            cleaned[name] = value
        return cleaned


class LeadPushSerializer(StrictSerializer):
    class Meta:
        ref_name = "LeadPush"

    first_name = TextField(max_length=200, required=False, allow_blank=True)
    last_name = TextField(max_length=200, required=False, allow_blank=True)
    email = TextField(max_length=254, required=False, allow_blank=True)
    phone = TextField(max_length=40, required=False, allow_blank=True)
    date_of_birth = serializers.DateField(required=False)
    message = TextField(max_length=5000, required=False, allow_blank=True)
    treatment_id = TenantRelatedField(Treatment, required=False, source="treatment_record")
    location_id = TenantRelatedField(Location, allow_archived=False, required=False, source="location_record")
    lead_source_id = TenantRelatedField(LeadSource, allow_archived=False, required=False, source="lead_source")
    marketing_consent = StrictBooleanField(required=False, default=False)
    consent_evidence = TextField(
        max_length=1000, required=False, allow_blank=True,
        help_text="Required with marketingConsent: what the person agreed to and where (wording, page, time).",
    )  # fmt: skip
    attribution = AttributionField(required=False)
    custom_fields = serializers.DictField(required=False, help_text=f"At most {MAX_CUSTOM_FIELDS} keys.")
    external_id = TextField(
        min_length=1, max_length=200, required=False,
        help_text="Your own id for this lead: a retry with the same id and content answers the first result (200); "
        "different content under the same id is 409 LEAD_EXTERNAL_ID_CONFLICT.",
    )  # fmt: skip

    def validate_email(self, value):
        if value:
            try:
                validate_email(value)
            except Exception:
                raise serializers.ValidationError("Enter a complete e-mail address, like jane@example.com.") from None
        return value

    def validate_treatment_id(self, value):
        if not value.active:
            raise serializers.ValidationError("is archived")
        return value

    def validate_custom_fields(self, value):
        if len(value) > MAX_CUSTOM_FIELDS:
            raise serializers.ValidationError(f"at most {MAX_CUSTOM_FIELDS} keys")
        return value

    def validate_external_id(self, value):
        return _printable_id(value, "your id for the lead")

    def validate(self, attrs):
        if not (attrs.get("email") or attrs.get("phone")):
            problem = "Enter an e-mail address or a phone number, so the practice can reply."
            raise serializers.ValidationError({"email": [problem], "phone": [problem]})
        if attrs.get("marketing_consent") and not (attrs.get("consent_evidence") or "").strip():
            raise serializers.ValidationError({"consentEvidence": ["is required when marketingConsent is true"]})
        return attrs


class PushedLeadSerializer(serializers.ModelSerializer):
    patient_id = serializers.UUIDField(allow_null=True)

    class Meta:
        model = PushedLead
        ref_name = "PushedLead"
        fields = ["id", "external_id", "patient_id", "patient_created", "journey_id", "created_at"]


# --- callbacks ------------------------------------------------------------------------------------------------------


class IntakeAnswerSerializer(serializers.Serializer):
    class Meta:
        ref_name = "LeadAdIntakeAnswer"

    received = serializers.BooleanField()
    duplicate = serializers.BooleanField(help_text="The identical body was received before: nothing new stored.")
    deliveries = serializers.IntegerField()


class DeauthorizedSerializer(serializers.Serializer):
    class Meta:
        ref_name = "LeadAdDeauthorized"

    received = serializers.BooleanField()


class TrackerSerializer(serializers.Serializer):
    class Meta:
        ref_name = "LeadAdDataDeletionStatus"

    confirmation_code = serializers.CharField()
    status = serializers.CharField()
    region = serializers.CharField()
    requested_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)
    peer_region = serializers.CharField(
        allow_null=True, help_text="forwarding, forwarded or failed: the request posted on to the other region."
    )
