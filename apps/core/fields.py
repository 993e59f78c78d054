"""Serializer fields shared by every area: the spec's UUID pattern, and ids resolved inside the request's practice."""

import re

from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.uuids import UUID_LIST_PATTERN, UUID_PATTERN, parse_uuid

UUID_SCHEMA = {"type": "string", "format": "uuid", "pattern": UUID_PATTERN}
UUID_LIST_SCHEMA = {"type": "string", "pattern": UUID_LIST_PATTERN, "description": "Comma-separated UUIDs."}


@extend_schema_field(UUID_SCHEMA)
class StrictUUIDField(serializers.Field):
    """A UUID in the canonical 8-4-4-4-12 form, versions 1 to 8, or the all-zero / all-f forms."""

    default_error_messages = {"invalid": "must be a UUID", "type": "must be a UUID string"}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("type")
        parsed = parse_uuid(data)
        if parsed is None:
            self.fail("invalid")
        return parsed

    def to_representation(self, value):
        return str(value)


@extend_schema_field(UUID_SCHEMA)
class TenantRelatedField(serializers.Field):
    """An id that must name a record of the request's practice (context["organization"]).

    Another practice's id is indistinguishable from an unknown one: 400 "does not exist", never the record.
    """

    default_error_messages = {
        "invalid": "must be a UUID",
        "does_not_exist": "does not exist in this practice",
        "archived": "is archived",
    }

    def __init__(self, model, *, allow_archived: bool = True, **kwargs):
        self.model, self.allow_archived = model, allow_archived
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        parsed = parse_uuid(data) if isinstance(data, str) else None
        if parsed is None:
            self.fail("invalid")
        organization = self.context["organization"]
        record = self.model.objects.for_org(organization).filter(id=parsed).first()
        if record is None:
            self.fail("does_not_exist")
        if not self.allow_archived and getattr(record, "archived_at", None) is not None:
            self.fail("archived")
        return record

    def to_representation(self, value):
        return str(value.pk if hasattr(value, "pk") else value)


MIN_YEAR, MAX_YEAR = 1900, 2999


class AwareDateTimeField(serializers.DateTimeField):
    """An ISO 8601 date-time that names its offset (Z or ±hh:mm): a wall-clock time alone is ambiguous."""

    default_error_messages = {
        "naive": "must include a timezone offset (Z or ±hh:mm)",
        "out_of_range": f"must be between the years {MIN_YEAR} and {MAX_YEAR}",
    }

    def to_internal_value(self, value):
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value.strip())
            except ValueError:
                parsed = None
            if parsed is not None and parsed.tzinfo is None:
                self.fail("naive")
        elif not isinstance(value, str):
            self.fail("invalid", format="ISO 8601 with an offset")
        parsed = super().to_internal_value(value)
        # Years at the calendar's edges overflow when moved to another timezone (9999-12-31T23:30Z in UTC+1).
        if not MIN_YEAR <= parsed.year <= MAX_YEAR:
            self.fail("out_of_range")
        return parsed


class TextField(serializers.CharField):
    """A JSON string: numbers and booleans are not silently turned into text."""

    default_error_messages = {"type": "must be a string"}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("type")
        return super().to_internal_value(data)


@extend_schema_field({"type": "string", "pattern": r"^([01]\d|2[0-3]):[0-5]\d$", "example": "21:00"})
class ClockTimeField(serializers.TimeField):
    """A time of day as HH:MM, both ways (OpenAPI's format "time" would promise RFC 3339 seconds and offset)."""

    def __init__(self, **kwargs):
        super().__init__(format="%H:%M", input_formats=["%H:%M"], **kwargs)


# What PostgreSQL cannot store in a JSON column: NUL (JSON's \u0000) and a UTF-16 surrogate left unpaired (JSON's
# "\ud800" alone), which a JSON parser accepts in any string, keys included.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
UNSTORABLE_PROBLEM = "keys and values must not contain NUL (\\u0000) or unpaired surrogate (\\ud800-\\udfff) characters"


def has_unstorable_text(value) -> bool:
    """Whether some string in a JSON structure (a key or a value, at any depth) cannot be stored in PostgreSQL."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _UNSTORABLE.search(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


class StrictIntegerField(serializers.IntegerField):
    """An integer as a JSON number: "12", 12.0, 12.5 and true are refused rather than coerced."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false: "yes", "true", 1 and null are refused (DRF's BooleanField takes them as booleans)."""

    default_error_messages = {"invalid": "must be a JSON boolean (true or false)"}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data
