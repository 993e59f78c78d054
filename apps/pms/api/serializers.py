"""Wire shapes of the connected PMS (camelCase on the wire; snake_case here)."""

from django.conf import settings
from rest_framework import serializers

from apps.core.fields import StrictBooleanField, TextField
from apps.core.serializers import (
    NonEmptyPatchSerializer,
    OffsetQuerySerializer,
    StrictSerializer,
    offset_page_serializer,
)
from apps.pms.models import ImportState, ItemKind, PmsConnection, PmsImport, PmsSyncReview, ReviewStatus
from apps.webhooks.public import UnsafeDestination, check_url_shape


def callback_path(connection: PmsConnection) -> str:
    return f"/webhooks/pms/{connection.provider}/{connection.routing_token}"


class ConnectionSerializer(serializers.ModelSerializer):
    callback_url = serializers.SerializerMethodField(
        help_text="Give this URL to the PMS for its change callbacks: the routing token in it picks this connection "
        "and grants nothing alone (every callback must be signed). null once disconnected."
    )
    api_key_set = serializers.SerializerMethodField(help_text="Whether an API key is stored (encrypted, never shown).")
    health_reason = serializers.CharField(help_text="Why the health is not healthy (a short code); empty otherwise.")

    class Meta:
        model = PmsConnection
        ref_name = "PmsConnection"
        fields = [
            "id",
            "provider",
            "name",
            "base_url",
            "api_key_set",
            "callback_url",
            "status",
            "health",
            "health_reason",
            "health_changed_at",
            "previous_secret_until",
            "activated_at",
            "disconnected_at",
            "created_at",
            "updated_at",
        ]

    def get_callback_url(self, connection) -> str | None:
        if connection.status == "disconnected":
            return None
        return settings.SVC_BASE_URL + callback_path(connection)

    def get_api_key_set(self, connection) -> bool:
        return bool(connection.api_key_encrypted)


class ConnectionWithSecretSerializer(ConnectionSerializer):
    signing_secret = serializers.CharField(
        allow_null=True,
        help_text="The callback signing secret: shown in this answer only (on connect and on rotation); null when "
        "this answer issued none.",
    )

    class Meta(ConnectionSerializer.Meta):
        ref_name = "PmsConnectionWithSecret"
        fields = [*ConnectionSerializer.Meta.fields, "signing_secret"]


ConnectionPageSerializer = offset_page_serializer(ConnectionSerializer, "PmsConnectionPage")


class BaseUrlField(TextField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data).strip().rstrip("/")
        try:
            check_url_shape(value)
        except UnsafeDestination as refused:
            raise serializers.ValidationError(str(refused)) from None
        return value


class ConnectionCreateSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=120)
    base_url = BaseUrlField(max_length=500, help_text="The PMS API's base URL (https, a public host).")
    api_key = TextField(min_length=8, max_length=512, write_only=True, help_text="Stored encrypted, never shown.")

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value.strip()


class ConnectionUpdateSerializer(NonEmptyPatchSerializer, ConnectionCreateSerializer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


class RotateSerializer(StrictSerializer):
    signing_secret = StrictBooleanField(required=False, default=False, help_text="Issue a new signing secret.")
    routing_token = StrictBooleanField(required=False, default=False, help_text="Issue a new callback URL.")

    def validate(self, attrs):
        if not attrs.get("signing_secret") and not attrs.get("routing_token"):
            raise serializers.ValidationError({"signingSecret": ["send signingSecret or routingToken as true"]})
        return attrs


class ImportErrorSerializer(serializers.Serializer):
    at = serializers.CharField()
    phase = serializers.CharField()
    code = serializers.CharField(help_text="e.g. pms_http_503, pms_timeout, patient_not_linked, appointment_clash.")
    item_id = serializers.CharField(help_text="The PMS's id of the item, when the problem is one item's.")

    class Meta:
        ref_name = "PmsImportError"


class ImportCountsSerializer(serializers.Serializer):
    patients = serializers.DictField(child=serializers.IntegerField(), help_text="created, matched, updated, unchanged")
    appointments = serializers.DictField(child=serializers.IntegerField(), help_text="created, updated, unchanged")
    practitioners_created = serializers.IntegerField()
    skipped = serializers.IntegerField()

    class Meta:
        ref_name = "PmsImportCounts"


class ImportSerializer(serializers.ModelSerializer):
    connection_id = serializers.UUIDField()
    counts = serializers.SerializerMethodField()
    position = serializers.SerializerMethodField(help_text="Where the run is: the phase and the cursor it resumes at.")
    errors = ImportErrorSerializer(many=True)

    class Meta:
        model = PmsImport
        ref_name = "PmsImport"
        fields = [
            "id",
            "connection_id",
            "state",
            "phase",
            "position",
            "pages",
            "counts",
            "errors",
            "failures",
            "started_at",
            "finished_at",
            "created_at",
            "updated_at",
        ]

    def get_counts(self, run) -> ImportCountsSerializer:
        return {
            "patients": {
                "created": run.patients_created,
                "matched": run.patients_matched,
                "updated": run.patients_updated,
                "unchanged": run.patients_unchanged,
            },
            "appointments": {
                "created": run.appointments_created,
                "updated": run.appointments_updated,
                "unchanged": run.appointments_unchanged,
            },
            "practitioners_created": run.practitioners_created,
            "skipped": run.skipped,
        }

    def get_position(self, run) -> dict:
        return {"phase": run.phase, "cursor": run.cursor or None}


ImportPageSerializer = offset_page_serializer(ImportSerializer, "PmsImportPage")


class ImportListQuerySerializer(OffsetQuerySerializer):
    state = serializers.ChoiceField(choices=ImportState.choices, required=False)


class ReviewSerializer(serializers.ModelSerializer):
    connection_id = serializers.UUIDField()
    patient_id = serializers.UUIDField(allow_null=True)
    appointment_id = serializers.UUIDField(allow_null=True)
    resolved_by_id = serializers.UUIDField(allow_null=True)

    class Meta:
        model = PmsSyncReview
        ref_name = "PmsSyncReview"
        fields = [
            "id",
            "connection_id",
            "kind",
            "provider_item_id",
            "revision",
            "patient_id",
            "appointment_id",
            "status",
            "resolved_at",
            "resolved_by_id",
            "created_at",
        ]


ReviewPageSerializer = offset_page_serializer(ReviewSerializer, "PmsSyncReviewPage")


class ReviewListQuerySerializer(OffsetQuerySerializer):
    status = serializers.ChoiceField(choices=ReviewStatus.choices, required=False)
    kind = serializers.ChoiceField(choices=ItemKind.choices, required=False)


class ResolveSerializer(StrictSerializer):
    action = serializers.ChoiceField(choices=["apply_incoming", "keep_current"])


class ReceivedSerializer(serializers.Serializer):
    received = serializers.BooleanField()
    duplicate = serializers.BooleanField(help_text="This delivery id was already received: nothing new stored.")
    state = serializers.ChoiceField(
        choices=["received", "rejected", "duplicate"],
        help_text="rejected: settled terminally (reason says why); it is not processed and must not be resent.",
    )
    reason = serializers.CharField(allow_null=True, help_text="Why a body was rejected, e.g. too_many_events.")

    class Meta:
        ref_name = "PmsCallbackReceived"
