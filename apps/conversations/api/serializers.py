"""Wire shapes of channel connections (camelCase on the wire; snake_case here)."""

import base64
import binascii
import re

from rest_framework import serializers

from apps.conversations.models import CREATABLE_KIND_CHOICES, PROVIDER_KIND_CHOICES, ChannelConnection, Kind, Status
from apps.conversations.services import CREDENTIALS
from apps.core.fields import ClockTimeField
from apps.core.naming import to_camel
from apps.core.serializers import StrictSerializer

_E164 = re.compile(r"^\+[1-9]\d{6,14}$")
_PHONE_NUMBER_ID = re.compile(r"^\d{5,32}$")
_LOCAL_PART = re.compile(r"^[a-z0-9](?:[a-z0-9.-]{0,38}[a-z0-9])?$")
# The contract's callback path per kind (spec, "Provider callbacks received"). The messaging platform and the
# e-mail provider post every account's callbacks to one URL (the phone number id or address routes them).
CALLBACK_PATHS = {
    Kind.MESSAGING_APP: "/webhooks/messaging-app",
    Kind.SMS: "/webhooks/sms/{token}",
    Kind.EMAIL: "/webhooks/email-provider",
    Kind.TELEPHONY_MESSAGING: "/webhooks/telephony-messaging/{token}",
    Kind.SHORT_VIDEO: "/webhooks/short-video",
}
SETTABLE_STATUSES = (Status.PENDING, Status.ACTIVE, Status.DISCONNECTED)


def callback_path(connection: ChannelConnection) -> str:
    return CALLBACK_PATHS[connection.kind].format(token=connection.routing_token)


def normalised_address(kind: str, address: str) -> str:
    """The address in the one form callbacks are matched by; ValidationError naming what is wrong."""
    value = address.strip()
    if kind in (Kind.SMS, Kind.TELEPHONY_MESSAGING):
        value = re.sub(r"[\s().-]", "", value)
        if not _E164.match(value):
            raise serializers.ValidationError("must be a number in E.164 form, such as +393331234567")
    elif kind == Kind.MESSAGING_APP:
        if not _PHONE_NUMBER_ID.match(value):
            raise serializers.ValidationError("must be the business phone number id (digits only)")
    else:
        value = value.lower()
        if not _LOCAL_PART.match(value):
            raise serializers.ValidationError(
                "must be the inbound address's first part (letters, digits, dots and hyphens, such as reception): "
                "the service completes it with a private suffix and the platform's inbound domain"
            )
    return value


def _check_credential(kind: str, name: str, value: str) -> None:
    if kind == Kind.TELEPHONY_MESSAGING and name == "public_key":
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != 32:
            raise serializers.ValidationError({name: ["must be the base64 Ed25519 public key (32 bytes)"]})


def validated_credentials(kind: str, credentials: dict, *, creating: bool) -> dict:
    required, optional = CREDENTIALS[kind]
    unknown = sorted(set(credentials) - set(required) - set(optional))
    if unknown:
        raise serializers.ValidationError({name: ["is not a credential of this kind"] for name in unknown})
    missing = [name for name in required if not credentials.get(name)] if creating else []
    if missing:
        raise serializers.ValidationError({name: ["is required for this kind"] for name in missing})
    for name, value in credentials.items():
        _check_credential(kind, name, value)
    return credentials


class ChannelConnectionSerializer(serializers.Serializer):
    id = serializers.UUIDField(read_only=True)
    kind = serializers.ChoiceField(choices=Kind.choices, read_only=True)
    name = serializers.CharField(read_only=True)
    address = serializers.CharField(read_only=True)
    status = serializers.ChoiceField(choices=Status.choices, read_only=True)
    health = serializers.CharField(read_only=True)
    health_reason = serializers.CharField(read_only=True)
    health_changed_at = serializers.DateTimeField(read_only=True, allow_null=True)
    credential_keys = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="Which credentials are set (camelCase names). The values are never returned.",
    )
    routing_token = serializers.CharField(
        read_only=True, help_text="Identifies the connection in its callback URL; grants nothing by itself."
    )
    callback_url = serializers.SerializerMethodField(
        help_text="Where the provider must send this channel's callbacks (set it in the provider's console)."
    )
    disconnected_at = serializers.DateTimeField(read_only=True, allow_null=True)
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)

    class Meta:
        ref_name = "ChannelConnection"

    def get_callback_url(self, connection: ChannelConnection) -> str:
        request = self.context.get("request")
        path = callback_path(connection)
        return request.build_absolute_uri(path) if request is not None else path

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["credential_keys"] = [to_camel(key) for key in data["credential_keys"]]
        return data


class ChannelConnectionCreateSerializer(StrictSerializer):
    kind = serializers.ChoiceField(
        choices=CREATABLE_KIND_CHOICES,
        help_text="A chat widget's connection is made with the widget (POST /widget-connections), a short-video "
        "account's through the platform's OAuth (POST /settings/channel-connections/short-video/connect), not here.",
    )
    name = serializers.CharField(min_length=1, max_length=120)
    address = serializers.CharField(
        max_length=254,
        help_text="sms and telephony_messaging: the number (E.164); messaging_app: the business phone number id; "
        "email: the first part of the inbound address (such as reception): the answer's address is it with a private "
        "suffix on the platform's inbound domain (reception.k3j9x2ab@inbound.…), where the practice forwards its "
        "public address. Nobody can claim another practice's inbox by guessing it.",
    )
    credentials = serializers.DictField(
        child=serializers.CharField(min_length=1, max_length=512),
        required=False,
        default=dict,
        help_text="messaging_app: accessToken (the number's system-user token; the app secret and verify token are "
        "the platform's); sms: accountSid, authToken; email: none (the domain is added to the platform's e-mail "
        "provider account); telephony_messaging: publicKey, the account's base64 Ed25519 key (apiKey optional).",
    )

    class Meta:
        ref_name = "ChannelConnectionCreate"

    def validate(self, attrs):
        try:
            attrs["address"] = normalised_address(attrs["kind"], attrs["address"])
        except serializers.ValidationError as error:
            raise serializers.ValidationError({"address": error.detail}) from None
        try:
            validated_credentials(attrs["kind"], attrs["credentials"], creating=True)
        except serializers.ValidationError as error:
            raise serializers.ValidationError({"credentials": error.detail}) from None
        return attrs


class ChannelConnectionUpdateSerializer(StrictSerializer):
    name = serializers.CharField(min_length=1, max_length=120, required=False)
    credentials = serializers.DictField(
        child=serializers.CharField(min_length=1, max_length=512),
        required=False,
        help_text="The credentials to replace; those not sent are kept.",
    )
    status = serializers.ChoiceField(
        choices=SETTABLE_STATUSES,
        required=False,
        help_text="disconnected stops receiving and frees the address; pending or active reconnects it (409 when "
        "another practice has connected the address meanwhile).",
    )

    class Meta:
        ref_name = "ChannelConnectionUpdate"

    def validate(self, attrs):
        if "credentials" in attrs:
            try:
                validated_credentials(self.context["kind"], attrs["credentials"], creating=False)
            except serializers.ValidationError as error:
                raise serializers.ValidationError({"credentials": error.detail}) from None
        return attrs


class ChannelConnectionListSerializer(serializers.Serializer):
    items = ChannelConnectionSerializer(many=True)

    class Meta:
        ref_name = "ChannelConnectionList"


class ChannelConnectionListQuerySerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=PROVIDER_KIND_CHOICES, required=False)
    status = serializers.ChoiceField(choices=Status.choices, required=False)


class MessagingSettingsSerializer(serializers.Serializer):
    quiet_hours_enabled = serializers.BooleanField()
    quiet_hours_start = ClockTimeField()
    quiet_hours_end = ClockTimeField()
    timezone = serializers.SerializerMethodField(help_text="The practice's time zone the hours are read in.")

    class Meta:
        ref_name = "MessagingSettings"

    def get_timezone(self, _rules) -> str:
        return self.context["timezone"]


class MessagingSettingsUpdateSerializer(StrictSerializer):
    quiet_hours_enabled = serializers.BooleanField(required=False)
    quiet_hours_start = ClockTimeField(required=False, help_text="HH:MM")
    quiet_hours_end = ClockTimeField(required=False, help_text="HH:MM")


class ShortVideoConnectSerializer(StrictSerializer):
    name = serializers.CharField(
        min_length=1,
        max_length=120,
        required=False,
        default="Short-video messages",
        help_text="The connection's name once connected.",
    )

    class Meta:
        ref_name = "ShortVideoConnect"


class ShortVideoConnectStartSerializer(serializers.Serializer):
    authorize_url = serializers.URLField(
        help_text="Send the person here; the platform returns them to GET /webhooks/short-video/oauth/callback."
    )
    expires_in = serializers.IntegerField(help_text="Seconds the attempt stays valid (600).")

    class Meta:
        ref_name = "ShortVideoConnectStart"
