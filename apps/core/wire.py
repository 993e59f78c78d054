"""Plain functions that write values the way the API's DRF fields do, for the hot read paths that render rows from
`.values()` instead of serializers (patient list and detail, the journeys board, Today).

- `Camelized`: a dict whose keys (and everything inside it) are already what the camelCase renderer would produce.
  `apps.core.renderers.camelize` returns it untouched instead of walking it again, so a row builder that writes
  camelCase keys directly (and keeps the renderer's exceptions: the contents of custom_fields, data and
  submitted_fields stay verbatim) costs the renderer one isinstance check per row.
- `datetime_string`: DRF's DateTimeField output under our settings (DATETIME_FORMAT "%Y-%m-%dT%H:%M:%S.%fZ", USE_TZ,
  TIME_ZONE "UTC", and no other timezone ever activated): the instant in UTC, always with microseconds. A naive
  value is read as UTC, as DRF's enforce_timezone makes it aware in the default timezone.
  `tests/core/test_wire.py` compares it with DRF's field.
- `decimal_string`: DRF's DecimalField output (COERCE_DECIMAL_TO_STRING) for a value already at the field's scale
  (a numeric(p, 2) column read from the database); anything else goes through the DRF field itself.
"""

from datetime import UTC, datetime
from decimal import Decimal

from rest_framework import serializers


class Camelized(dict):
    """An already camelCased piece of a response: the renderer writes it as it is."""

    __slots__ = ()


_drf_datetime = serializers.DateTimeField().to_representation


def datetime_string(value: datetime | None) -> str | None:
    """serializers.DateTimeField().to_representation(value), without its per-call timezone and format lookups."""
    if value is None:
        return None
    offset = value.utcoffset()
    if offset is None:
        naive = value.replace(tzinfo=None) if value.tzinfo is not None else value
    elif offset:
        naive = value.astimezone(UTC).replace(tzinfo=None)
    else:
        naive = value.replace(tzinfo=None)
    if naive.year < 1000:  # strftime's %Y does not pad to four digits; isoformat does
        return _drf_datetime(value)
    return naive.isoformat(timespec="microseconds") + "Z"


_decimal_fields: dict[tuple[int, int], serializers.DecimalField] = {}


def decimal_string(value: Decimal | None, *, max_digits: int, decimal_places: int) -> str | None:
    """serializers.DecimalField(max_digits, decimal_places).to_representation(value)."""
    if value is None:
        return None
    _sign, digits, exponent = value.as_tuple()
    if exponent == -decimal_places and len(digits) <= max_digits:
        return f"{value:f}"
    field = _decimal_fields.get((max_digits, decimal_places))
    if field is None:
        field = _decimal_fields[(max_digits, decimal_places)] = serializers.DecimalField(
            max_digits=max_digits, decimal_places=decimal_places
        )
    return field.to_representation(value)


def uuid_string(value) -> str | None:
    """serializers.UUIDField().to_representation (hex_verbose), None kept."""
    return None if value is None else str(value)
