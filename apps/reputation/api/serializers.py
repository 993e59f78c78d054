"""Wire shapes of the reputation area (camelCase on the wire; snake_case here)."""

from urllib.parse import urlsplit

from rest_framework import serializers

from apps.appointments.public import Appointment
from apps.core.fields import TenantRelatedField, TextField
from apps.core.serializers import OffsetQuerySerializer, StrictSerializer, offset_page_serializer
from apps.patients.public import Location, Patient
from apps.reputation.models import (
    Channel,
    Feedback,
    Provider,
    ReplyStatus,
    ReputationSettings,
    RequestStatus,
    Review,
    ReviewRequest,
    ReviewSource,
    SourceStatus,
)

MAX_COMMENT = 5000
MAX_REPLY = 4096  # the platform's limit on a reply


# --- settings -------------------------------------------------------------------------------------------------------


class SettingsSerializer(serializers.ModelSerializer):
    class Meta:
        model = ReputationSettings
        ref_name = "ReputationSettings"
        fields = [
            "rating_threshold",
            "question",
            "auto_request_after_appointment",
            "auto_request_delay_minutes",
            "auto_request_channel",
            "updated_at",
        ]


class SettingsWriteSerializer(StrictSerializer):
    rating_threshold = serializers.IntegerField(
        min_value=1, max_value=5, required=False, help_text="Ratings at or above it are pointed at the review site."
    )
    question = TextField(max_length=300, required=False, allow_blank=True)
    auto_request_after_appointment = serializers.BooleanField(
        required=False,
        help_text="Send a review request automatically when an appointment is completed (default false). Skipped "
        "when the appointment already has a request, the patient had one in the last 30 days, or the appointment's "
        "location has no active review source; consent, opt-outs and blocks apply as for a manual request.",
    )
    auto_request_delay_minutes = serializers.IntegerField(
        min_value=0,
        max_value=10080,
        required=False,
        help_text="How long after the completion the request is sent, in minutes (0 to 10080; default 120).",
    )
    auto_request_channel = serializers.ChoiceField(
        choices=Channel.choices, required=False, help_text="sms (default) or email."
    )

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("send at least one field to change")
        return attrs


# --- sources --------------------------------------------------------------------------------------------------------


def _https(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.netloc or parts.username or parts.password:
        raise serializers.ValidationError("must be an https URL")
    return value


class CredentialsSerializer(StrictSerializer):
    access_token = TextField(min_length=1, max_length=4096, help_text="The platform's OAuth access token.")

    class Meta:
        ref_name = "ReviewSourceCredentials"


class SourceSerializer(serializers.ModelSerializer):
    location_id = serializers.UUIDField()
    credential_keys = serializers.ListField(child=serializers.CharField(), help_text="Which credentials are set.")

    class Meta:
        model = ReviewSource
        ref_name = "ReviewSource"
        fields = [
            "id",
            "location_id",
            "provider",
            "name",
            "account_ref",
            "location_ref",
            "review_url",
            "status",
            "credential_keys",
            "imported_at",
            "last_synced_at",
            "last_sync_error",
            "created_at",
            "updated_at",
        ]


SourcePageSerializer = offset_page_serializer(SourceSerializer, "ReviewSourcePage")


class SourceCreateSerializer(StrictSerializer):
    location_id = TenantRelatedField(Location, source="location", allow_archived=False)
    provider = serializers.ChoiceField(choices=Provider.choices, default=Provider.GOOGLE_BUSINESS_PROFILE)
    name = TextField(min_length=1, max_length=120)
    account_ref = serializers.RegexField(
        r"^[A-Za-z0-9_-]{1,120}$", help_text="The platform's account id (accounts/{account})."
    )
    location_ref = serializers.RegexField(
        r"^[A-Za-z0-9_-]{1,120}$", help_text="The platform's location id (locations/{location})."
    )
    review_url = TextField(max_length=2048, help_text="The public 'write a review' link (https).")
    credentials = CredentialsSerializer()

    def validate_review_url(self, value):
        return _https(value)


class SourceUpdateSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=120, required=False)
    review_url = TextField(max_length=2048, required=False)
    status = serializers.ChoiceField(choices=SourceStatus.choices, required=False)
    credentials = CredentialsSerializer(required=False)

    def validate_review_url(self, value):
        return _https(value)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("send at least one field to change")
        return attrs


class SourceListQuerySerializer(OffsetQuerySerializer):
    location_id = serializers.UUIDField(required=False)


class SyncResultSerializer(serializers.Serializer):
    historical = serializers.BooleanField(help_text="The source's first import: no events.")
    received = serializers.IntegerField(help_text="New reviews stored.")
    updated = serializers.IntegerField(help_text="Reviews whose content changed.")
    unchanged = serializers.IntegerField()
    emitted = serializers.IntegerField(help_text="Review events recorded (at most five per location per sync).")

    class Meta:
        ref_name = "ReviewSyncResult"


# --- reviews --------------------------------------------------------------------------------------------------------


class ReviewSerializer(serializers.ModelSerializer):
    source_id = serializers.UUIDField()
    location_id = serializers.UUIDField()
    reply_status = serializers.ChoiceField(choices=ReplyStatus.choices)

    class Meta:
        model = Review
        ref_name = "Review"
        fields = [
            "id",
            "source_id",
            "location_id",
            "provider_review_id",
            "reviewer_name",
            "rating",
            "comment",
            "review_created_at",
            "review_updated_at",
            "reply_comment",
            "reply_updated_at",
            "reply_status",
            "reply_error",
            "created_at",
            "updated_at",
        ]


ReviewPageSerializer = offset_page_serializer(ReviewSerializer, "ReviewPage")


class ReviewListQuerySerializer(OffsetQuerySerializer):
    location_id = serializers.UUIDField(required=False)
    rating = serializers.IntegerField(min_value=1, max_value=5, required=False)
    replied = serializers.BooleanField(required=False, allow_null=True, default=None)


class ReplySerializer(StrictSerializer):
    comment = TextField(min_length=1, max_length=MAX_REPLY)

    def validate_comment(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value


# --- requests -------------------------------------------------------------------------------------------------------


class RequestSerializer(serializers.ModelSerializer):
    patient_id = serializers.UUIDField()
    appointment_id = serializers.UUIDField(allow_null=True)
    location_id = serializers.UUIDField()
    message_id = serializers.UUIDField(allow_null=True)
    status = serializers.ChoiceField(choices=RequestStatus.choices)

    class Meta:
        model = ReviewRequest
        ref_name = "ReviewRequest"
        fields = [
            "id",
            "patient_id",
            "appointment_id",
            "location_id",
            "channel",
            "message_id",
            "status",
            "rating",
            "expires_at",
            "opened_at",
            "rated_at",
            "reviewed_at",
            "created_at",
            "updated_at",
        ]


RequestPageSerializer = offset_page_serializer(RequestSerializer, "ReviewRequestPage")


class RequestCreateSerializer(StrictSerializer):
    patient_id = TenantRelatedField(Patient, source="patient")
    appointment_id = TenantRelatedField(Appointment, source="appointment", required=False, allow_null=True)
    location_id = TenantRelatedField(Location, source="location", allow_archived=False)
    channel = serializers.ChoiceField(choices=Channel.choices)


class RequestListQuerySerializer(OffsetQuerySerializer):
    patient_id = serializers.UUIDField(required=False)
    status = serializers.ChoiceField(choices=RequestStatus.choices, required=False)


# --- feedback -------------------------------------------------------------------------------------------------------


class FeedbackSerializer(serializers.ModelSerializer):
    request_id = serializers.UUIDField()
    patient_id = serializers.UUIDField()
    location_id = serializers.UUIDField()

    class Meta:
        model = Feedback
        ref_name = "ReputationFeedback"
        fields = ["id", "request_id", "patient_id", "location_id", "rating", "comment", "created_at"]


FeedbackPageSerializer = offset_page_serializer(FeedbackSerializer, "ReputationFeedbackPage")


class FeedbackListQuerySerializer(OffsetQuerySerializer):
    location_id = serializers.UUIDField(required=False)
    patient_id = serializers.UUIDField(required=False)


# --- public /r/{token} ----------------------------------------------------------------------------------------------


class JsonIntegerField(serializers.IntegerField):
    """A JSON number: a string such as "5" is refused, not read as one."""

    default_error_messages = {"type": "must be an integer"}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("type")
        return super().to_internal_value(data)


class PublicConfigSerializer(serializers.Serializer):
    practice_name = serializers.CharField()
    location_name = serializers.CharField()
    question = serializers.CharField()
    status = serializers.ChoiceField(choices=RequestStatus.choices)
    rated = serializers.BooleanField(help_text="The patient has already answered.")

    class Meta:
        ref_name = "ReviewPageConfig"


class RatingSerializer(StrictSerializer):
    rating = JsonIntegerField(min_value=1, max_value=5)
    comment = TextField(max_length=MAX_COMMENT, required=False, allow_blank=True, default="")


class RatingAnswerSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(
        choices=[("review", "review"), ("feedback", "feedback")],
        help_text="review: go on to the public review site (reviewUrl); feedback: kept privately for the practice.",
    )
    rating = serializers.IntegerField()
    review_url = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "ReviewRatingAnswer"
