"""apps.core.wire: the row builders' value writers give exactly what the DRF fields give, and a Camelized dict
passes the renderer untouched."""

import datetime
import decimal
import zoneinfo

import pytest
from django.conf import settings
from rest_framework import serializers

from apps.core.renderers import CamelCaseJSONRenderer, camelize
from apps.core.wire import Camelized, datetime_string, decimal_string, uuid_string

ROME = zoneinfo.ZoneInfo("Europe/Rome")
DATETIMES = [
    datetime.datetime(2025, 3, 1, 12, 0, tzinfo=datetime.UTC),  # microsecond 0
    datetime.datetime(2025, 3, 1, 12, 0, 0, 1, tzinfo=datetime.UTC),
    datetime.datetime(2025, 3, 1, 23, 59, 59, 999999, tzinfo=datetime.UTC),
    datetime.datetime(2025, 3, 30, 2, 30, 0, 123456, tzinfo=ROME),  # a summer-time change
    datetime.datetime(2024, 12, 31, 23, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=-5, minutes=-30))),
    datetime.datetime(2024, 2, 29, 0, 0, 0, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=14))),
    datetime.datetime(2025, 6, 1, 8, 15, 30, 250000),  # naive: read as UTC, as DRF does
    datetime.datetime(1000, 1, 1, 0, 0, tzinfo=datetime.UTC),
    datetime.datetime(999, 12, 31, 12, 0, tzinfo=datetime.UTC),  # below 1000: DRF's own (unpadded) answer
    datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC),
]


def test_the_settings_the_datetime_writer_relies_on():
    assert settings.USE_TZ is True
    assert settings.TIME_ZONE == "UTC"
    assert settings.REST_FRAMEWORK["DATETIME_FORMAT"] == "%Y-%m-%dT%H:%M:%S.%fZ"


@pytest.mark.parametrize("value", DATETIMES, ids=str)
def test_datetime_string_is_drf_datetime_field(value):
    assert datetime_string(value) == serializers.DateTimeField().to_representation(value)


def test_datetime_string_keeps_none():
    assert datetime_string(None) is None


@pytest.mark.parametrize(
    "value", ["0.00", "12.50", "-3.00", "9999999999.99", "1E+2", "1.5", "0.125", "0", "12345678901234.00"]
)
@pytest.mark.parametrize("places", [(12, 2), (16, 2)])
def test_decimal_string_is_drf_decimal_field(value, places):
    max_digits, decimal_places = places

    def answer(write):
        try:
            return write(decimal.Decimal(value))
        except decimal.InvalidOperation as error:  # beyond max_digits: DRF's field raises, and so does ours
            return type(error)

    field = serializers.DecimalField(max_digits=max_digits, decimal_places=decimal_places)
    assert answer(field.to_representation) == answer(
        lambda v: decimal_string(v, max_digits=max_digits, decimal_places=decimal_places)
    )


def test_uuid_string():
    import uuid

    value = uuid.uuid4()
    assert uuid_string(value) == serializers.UUIDField().to_representation(value)
    assert uuid_string(None) is None


def test_camelized_is_written_as_it_is():
    row = Camelized(firstName="Ada", customFields={"policy_number": 1}, created_at="kept")
    data = {"items": [row], "next_cursor": None, "one": row}
    assert camelize(data)["items"][0] is row
    assert camelize(data)["one"] is row
    assert camelize(row) is row
    assert CamelCaseJSONRenderer().render(data) == (
        b'{"items":[{"firstName":"Ada","customFields":{"policy_number":1},"created_at":"kept"}],"nextCursor":null,'
        b'"one":{"firstName":"Ada","customFields":{"policy_number":1},"created_at":"kept"}}'
    )
    # the standard library path (?indent) writes the same object
    indented = CamelCaseJSONRenderer().render(data, "application/json; indent=2", {})
    assert b'"created_at": "kept"' in indented
