"""Wire shapes of the chat widget (camelCase on the wire; snake_case here)."""

import re
from urllib.parse import urlsplit

from django.conf import settings
from rest_framework import serializers

from apps.core.fields import TextField
from apps.core.serializers import OffsetQuerySerializer, StrictSerializer, offset_page_serializer
from apps.widget.models import WidgetConnection
from apps.widget.selectors import DAYS

CLOCK = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
MAX_ORIGINS = 20


def normalised_origin(value: str) -> str | None:
    """scheme://host[:port] in lower case, or None when `value` is not exactly an http(s) origin."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or parts.username or parts.password:
        return None
    return f"{parts.scheme}://{parts.hostname.lower()}" + (f":{port}" if port else "")


class OfficeHoursField(serializers.JSONField):
    """{"mon": [["09:00", "17:00"]], …}: days mon…sun, each a list of [start, end) 24-hour HH:MM ranges."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be an object of days")
        hours = {}
        for day, ranges in data.items():
            if day not in DAYS:
                raise serializers.ValidationError(f"{day!r} is not one of {', '.join(DAYS)}")
            if not isinstance(ranges, list) or len(ranges) > 6:
                raise serializers.ValidationError(f"{day}: must be a list of at most 6 [start, end] ranges")
            for item in ranges:
                if not (isinstance(item, list) and len(item) == 2 and all(isinstance(t, str) for t in item)):
                    raise serializers.ValidationError(f'{day}: each range is ["HH:MM", "HH:MM"]')
                if not (CLOCK.match(item[0]) and CLOCK.match(item[1])) or item[0] >= item[1]:
                    raise serializers.ValidationError(f"{day}: {item} must be two 24-hour times, start before end")
            hours[day] = [list(item) for item in ranges]
        return hours


class WidgetSerializer(serializers.ModelSerializer):
    channel_connection_id = serializers.UUIDField(source="channel_id")
    snippet = serializers.SerializerMethodField()

    class Meta:
        model = WidgetConnection
        ref_name = "WidgetConnection"
        fields = [
            "id",
            "name",
            "embed_key",
            "allowed_origins",
            "greeting",
            "away_message",
            "office_hours",
            "active",
            "channel_connection_id",
            "snippet",
            "created_at",
            "updated_at",
        ]

    def get_snippet(self, widget) -> str:
        """The HTML a practice pastes before </body> on its website."""
        script = f"{settings.SVC_BASE_URL}/static/widget/widget.js"
        return f'<script src="{script}" data-embed-key="{widget.embed_key}" defer></script>'


WidgetPageSerializer = offset_page_serializer(WidgetSerializer, "WidgetConnectionPage")


class WidgetListQuerySerializer(OffsetQuerySerializer):
    pass


class WidgetWriteSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=120)
    allowed_origins = serializers.ListField(
        child=TextField(max_length=300),
        max_length=MAX_ORIGINS,
        required=False,
        help_text="The websites that may use the widget: origins such as https://www.smiles.example (scheme, host, "
        "port; no path). A browser on any other origin is refused.",
    )
    greeting = TextField(max_length=500, required=False, allow_blank=True)
    away_message = TextField(max_length=500, required=False, allow_blank=True, help_text="Shown outside office hours.")
    office_hours = OfficeHoursField(
        required=False,
        help_text='{"mon": [["09:00", "17:00"]], …} in the practice\'s timezone; days not named are closed; {}: '
        "always open.",
    )
    active = serializers.BooleanField(required=False)
    rotate_key = serializers.BooleanField(
        required=False, default=False, write_only=True, help_text="Issue a new embed key; the old one stops at once."
    )

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value.strip()

    def validate_allowed_origins(self, value):
        origins = []
        for raw in value:
            origin = normalised_origin(raw)
            if origin is None:
                raise serializers.ValidationError(f"{raw!r} is not an origin such as https://www.example.com")
            if origin not in origins:
                origins.append(origin)
        return origins


# --- public -----------------------------------------------------------------------------------------------------------


class ConfigSerializer(serializers.Serializer):
    practice_name = serializers.CharField()
    name = serializers.CharField()
    greeting = serializers.CharField()
    away_message = serializers.CharField()
    online = serializers.BooleanField(help_text="Inside the office hours now.")
    office_hours = serializers.JSONField()
    timezone = serializers.CharField()

    class Meta:
        ref_name = "WidgetConfig"


class VisitorStartedSerializer(serializers.Serializer):
    visitor_token = serializers.CharField(help_text="Shown once. Send it as X-Widget-Visitor (and on the socket).")
    visitor_id = serializers.UUIDField()

    class Meta:
        ref_name = "WidgetVisitorStarted"


class ThreadOpenSerializer(StrictSerializer):
    name = TextField(min_length=1, max_length=200)
    email = serializers.EmailField(max_length=254, required=False, allow_blank=True)
    phone = TextField(max_length=32, required=False, allow_blank=True)

    def validate_name(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value.strip()

    def validate_phone(self, value):
        if value and (not all(ch.isdigit() or ch in "+ -()" for ch in value) or sum(c.isdigit() for c in value) < 6):
            raise serializers.ValidationError("must be a phone number")
        return value.strip()

    def validate(self, attrs):
        if not (attrs.get("email") or attrs.get("phone")):
            raise serializers.ValidationError({"email": ["give an e-mail address or a phone number"]})
        return attrs


class WidgetMessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    sender = serializers.ChoiceField(choices=["visitor", "practice"], help_text="Who wrote it.")
    body = serializers.CharField()
    sent_at = serializers.DateTimeField()

    class Meta:
        ref_name = "WidgetMessage"


class ThreadSerializer(serializers.Serializer):
    open = serializers.BooleanField(help_text="false until the visitor has opened it with their details.")
    name = serializers.CharField()
    messages = WidgetMessageSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "WidgetThread"


class MessagesQuerySerializer(StrictSerializer):
    after = TextField(required=False, max_length=200, help_text="nextCursor of the previous read: only newer ones.")
    limit = serializers.IntegerField(min_value=1, max_value=100, default=50)


class MessagesPageSerializer(serializers.Serializer):
    items = WidgetMessageSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="Pass as after= to read what came next.")

    class Meta:
        ref_name = "WidgetMessagePage"


class SendSerializer(StrictSerializer):
    body = TextField(min_length=1, max_length=4096)
    client_message_id = TextField(
        required=False,
        max_length=64,
        help_text="The page's own id for this message: a retry with the same id answers the stored message (200).",
    )

    def validate_body(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain something other than spaces")
        return value

    def validate_client_message_id(self, value):
        if value and not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", value):
            raise serializers.ValidationError("letters, digits, '_', '.', '-' only")
        return value
