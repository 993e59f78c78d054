"""Wire shapes of the dialer (camelCase on the wire; snake_case here)."""

import phonenumbers
from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.accounts.models import Membership
from apps.core.crypto import ed25519_public_key_valid
from apps.core.fields import StrictBooleanField, TenantRelatedField, TextField
from apps.core.serializers import (
    NonEmptyPatchSerializer,
    OffsetQuerySerializer,
    StrictSerializer,
    offset_page_serializer,
)
from apps.core.wire import Camelized
from apps.dialer.models import (
    Call,
    CallStatus,
    DialerConnection,
    Direction,
    NumberStatus,
    PhoneNumber,
    PortingOrder,
    Recording,
    TelephonyEvent,
)
from apps.patients.public import Patient


def callback_path(connection: DialerConnection) -> str:
    return f"/webhooks/telephony/{connection.routing_token}"


class E164Field(TextField):
    """A phone number in E.164 (+ and the country code): refused unless it is a possible number."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 20)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data).strip()
        try:
            parsed = phonenumbers.parse(value, None)
        except phonenumbers.NumberParseException:
            raise serializers.ValidationError("must be a phone number in E.164 form, such as +390212345678") from None
        if not value.startswith("+") or not phonenumbers.is_possible_number(parsed):
            raise serializers.ValidationError("must be a phone number in E.164 form, such as +390212345678")
        return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


class MemberField(serializers.Field):
    """A member of the request's practice (their user id); null clears it."""

    default_error_messages = {"invalid": "must be the user id of a member of this practice"}

    def to_internal_value(self, data):
        from apps.core.uuids import parse_uuid

        parsed = parse_uuid(data) if isinstance(data, str) else None
        membership = (
            Membership.objects.for_org(self.context["organization"]).select_related("user").filter(user_id=parsed)
            if parsed
            else None
        )
        found = membership.first() if membership is not None else None
        if found is None:
            self.fail("invalid")
        return found.user

    def to_representation(self, value):
        return str(value.pk if hasattr(value, "pk") else value)


# --- connections ------------------------------------------------------------------------------------------------------


class ConnectionSerializer(serializers.ModelSerializer):
    webhook_url = serializers.SerializerMethodField(
        help_text="Give this URL to the provider as the Call Control application's webhook URL: its routing token "
        "picks this connection and grants nothing alone (every callback must be signed by the account)."
    )
    failover_probe_url = serializers.SerializerMethodField(help_text="For the provider's failover service.")
    api_key_set = serializers.SerializerMethodField(help_text="Always true: the key is stored encrypted, never shown.")
    missed_call_assignee_id = serializers.UUIDField(allow_null=True)

    class Meta:
        model = DialerConnection
        ref_name = "DialerConnection"
        fields = [
            "id",
            "name",
            "provider",
            "status",
            "webhook_url",
            "failover_probe_url",
            "public_key",
            "api_key_set",
            "call_control_app_id",
            "record_calls",
            "missed_call_assignee_id",
            "created_at",
            "updated_at",
            "disconnected_at",
        ]

    def get_webhook_url(self, connection) -> str:
        return settings.SVC_BASE_URL + callback_path(connection)

    def get_failover_probe_url(self, connection) -> str:
        return settings.SVC_BASE_URL + callback_path(connection) + "/failover-probe"

    def get_api_key_set(self, connection) -> bool:
        return bool(connection.api_key_encrypted)


ConnectionPageSerializer = offset_page_serializer(ConnectionSerializer, "DialerConnectionPage")


class PublicKeyField(TextField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data).strip()
        if not ed25519_public_key_valid(value):
            raise serializers.ValidationError("must be the account's Ed25519 public key (base64 of 32 bytes)")
        return value


class ConnectionWriteSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=120)
    api_key = TextField(
        min_length=8, max_length=512, write_only=True, help_text="The account's API key: stored encrypted, never shown."
    )
    public_key = PublicKeyField(max_length=64, help_text="The account's Ed25519 public key (base64), for callbacks.")
    call_control_app_id = TextField(max_length=64, required=False, allow_blank=True)
    record_calls = StrictBooleanField(required=False)
    missed_call_assignee_id = MemberField(required=False, allow_null=True, source="missed_call_assignee")

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value.strip()


class ConnectionUpdateSerializer(NonEmptyPatchSerializer, ConnectionWriteSerializer):
    rotate_token = StrictBooleanField(
        required=False, write_only=True, help_text="Issue a new routing token: the old webhook URL answers 404 at once."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


# --- numbers ----------------------------------------------------------------------------------------------------------


class NumberSerializer(serializers.ModelSerializer):
    connection_id = serializers.UUIDField()
    porting_order_id = serializers.UUIDField(allow_null=True)

    class Meta:
        model = PhoneNumber
        ref_name = "DialerNumber"
        fields = [
            "id",
            "connection_id",
            "phone_number",
            "status",
            "source",
            "porting_order_id",
            "portout_status",
            "created_at",
            "released_at",
        ]


NumberPageSerializer = offset_page_serializer(NumberSerializer, "DialerNumberPage")


class NumberListQuerySerializer(OffsetQuerySerializer):
    connection_id = TenantRelatedField(DialerConnection, required=False)
    status = serializers.ChoiceField(choices=NumberStatus.choices, required=False)


class NumberSearchQuerySerializer(StrictSerializer):
    country_code = serializers.RegexField(r"^[A-Z]{2}$", help_text="ISO 3166-1 alpha-2, e.g. IT, GB, US.")
    area_code = serializers.RegexField(r"^\d{1,6}$", required=False, help_text="National destination code.")
    locality = TextField(max_length=80, required=False)
    contains = serializers.RegexField(r"^\d{1,10}$", required=False, help_text="Digits the number contains.")
    limit = serializers.IntegerField(min_value=1, max_value=50, default=10)
    connection_id = TenantRelatedField(DialerConnection, required=False)


class AvailableNumberSerializer(serializers.Serializer):
    phone_number = serializers.CharField()
    region = serializers.CharField()
    features = serializers.ListField(child=serializers.CharField())
    monthly_cost = serializers.CharField()
    upfront_cost = serializers.CharField()
    currency = serializers.CharField()

    class Meta:
        ref_name = "DialerAvailableNumber"


class AvailableNumbersSerializer(serializers.Serializer):
    items = AvailableNumberSerializer(many=True)

    class Meta:
        ref_name = "DialerAvailableNumbers"


class NumberOrderSerializer(StrictSerializer):
    phone_number = E164Field()
    connection_id = TenantRelatedField(DialerConnection, required=False)


# --- porting ----------------------------------------------------------------------------------------------------------


class PortingOrderSerializer(serializers.ModelSerializer):
    connection_id = serializers.UUIDField()
    phone_numbers = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = PortingOrder
        ref_name = "DialerPortingOrder"
        fields = [
            "id",
            "connection_id",
            "provider_order_id",
            "phone_numbers",
            "status",
            "last_event_type",
            "last_event_at",
            "created_at",
            "updated_at",
        ]


PortingOrderPageSerializer = offset_page_serializer(PortingOrderSerializer, "DialerPortingOrderPage")


class PortingOrdersCreatedSerializer(serializers.Serializer):
    items = PortingOrderSerializer(many=True)

    class Meta:
        ref_name = "DialerPortingOrdersCreated"


class PortingOrderCreateSerializer(StrictSerializer):
    phone_numbers = serializers.ListField(child=E164Field(), min_length=1, max_length=50)
    connection_id = TenantRelatedField(DialerConnection, required=False)

    def validate_phone_numbers(self, value):
        return list(dict.fromkeys(value))


# --- parked events ----------------------------------------------------------------------------------------------------


class VerbatimJSONField(serializers.JSONField):
    """A provider's body as it arrived: its keys are not camelCased on the way out."""

    def to_representation(self, value):
        return Camelized(value) if isinstance(value, dict) else value


class ParkedEventSerializer(serializers.ModelSerializer):
    connection_id = serializers.UUIDField()
    payload = VerbatimJSONField(help_text="The provider's signed body, as received (its own key names).")

    class Meta:
        model = TelephonyEvent
        ref_name = "DialerParkedEvent"
        fields = ["id", "connection_id", "event_id", "event_type", "state", "occurred_at", "created_at", "payload"]


ParkedEventPageSerializer = offset_page_serializer(ParkedEventSerializer, "DialerParkedEventPage")


class ParkedListQuerySerializer(OffsetQuerySerializer):
    connection_id = TenantRelatedField(DialerConnection, required=False)


# --- calls ------------------------------------------------------------------------------------------------------------


class RecordingSerializer(serializers.ModelSerializer):
    class Meta:
        model = Recording
        ref_name = "DialerRecording"
        fields = ["id", "kind", "state", "duration_seconds", "size", "content_type", "created_at"]


class CallSerializer(serializers.ModelSerializer):
    number_id = serializers.UUIDField(allow_null=True)
    patient_id = serializers.UUIDField(allow_null=True)
    user_id = serializers.UUIDField(allow_null=True)
    recording = serializers.SerializerMethodField(help_text="The newest recording (or voicemail), if any.")

    class Meta:
        model = Call
        ref_name = "Call"
        fields = [
            "id",
            "direction",
            "status",
            "from_number",
            "to_number",
            "number_id",
            "patient_id",
            "user_id",
            "started_at",
            "answered_at",
            "ended_at",
            "duration_seconds",
            "hangup_cause",
            "answered_by",
            "follow_up_task_id",
            "recording",
            "created_at",
        ]

    @extend_schema_field(RecordingSerializer(allow_null=True))
    def get_recording(self, call):
        recordings = getattr(call, "_prefetched_objects_cache", {}).get("recordings")
        if recordings is None:
            recordings = list(call.recordings.order_by("-created_at", "-id")[:1])
        return RecordingSerializer(recordings[0]).data if recordings else None


class CallListQuerySerializer(StrictSerializer):
    patient_id = TenantRelatedField(Patient, required=False)
    direction = serializers.ChoiceField(choices=Direction.choices, required=False)
    status = serializers.ChoiceField(choices=CallStatus.choices, required=False)
    number_id = TenantRelatedField(PhoneNumber, required=False)
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100)


class CallPlaceSerializer(StrictSerializer):
    to = E164Field(required=False, help_text="The number to call; defaults to the patient's mobile (or other) phone.")
    patient_id = TenantRelatedField(Patient, required=False, source="patient")
    from_number_id = TenantRelatedField(
        PhoneNumber, required=False, source="from_number", help_text="Defaults to the practice's first active number."
    )

    def validate(self, attrs):
        patient = attrs.get("patient")
        if not attrs.get("to"):
            if patient is None:
                raise serializers.ValidationError({"to": ["send to or patientId"]})
            number = patient.phone_mobile or patient.phone_other
            try:
                attrs["to"] = E164Field().to_internal_value(number or "")
            except serializers.ValidationError:
                raise serializers.ValidationError(
                    {"patientId": ["the patient has no phone number in E.164 form: send to"]}
                ) from None
        return attrs


class ReceivedSerializer(serializers.Serializer):
    received = serializers.BooleanField()
    duplicate = serializers.BooleanField(help_text="The connection already held this event id: nothing changed.")
    parked = serializers.BooleanField(help_text="Not a number (or porting order) connected here: kept for review.")

    class Meta:
        ref_name = "TelephonyCallbackReceived"


class ProbeSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable"])
    dependency = serializers.ChoiceField(choices=["database", "r2"], required=False)

    class Meta:
        ref_name = "TelephonyFailoverProbe"
