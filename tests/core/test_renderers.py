"""apps.core.renderers: the cached camelCase renderer gives the bytes djangorestframework_camel_case gives."""

import datetime
import decimal
import uuid

from djangorestframework_camel_case.render import CamelCaseJSONRenderer as StockRenderer

from apps.core.renderers import CamelCaseJSONRenderer, camel_key

SAMPLE = {
    "items": [
        {
            "id": uuid.UUID("12345678-1234-4234-8234-123456789abc"),
            "first_name": "Mario",
            "address_line1": "via Roma 10",
            "phone_2_number": None,
            "merged_into_patient_id": None,
            "created_at": datetime.datetime(2025, 3, 1, 12, 0, tzinfo=datetime.UTC),
            "date_of_birth": datetime.date(1980, 1, 1),
            "balance": decimal.Decimal("1.50"),
            "sms_opt_out": False,
            "custom_fields": {"policy_number": "P1", "nested_key": {"keep_me": 1}},
            "data": {"from_status": "lead"},
            "tags": [{"id": "t", "tag_color": "#ffffff"}],
            "scores": (1, 2.5, "x_y"),
            "_private": 1,
            "trailing_": 2,
        }
    ],
    "total": 1,
    "next_cursor": None,
}


def test_same_bytes_as_the_stock_renderer():
    assert CamelCaseJSONRenderer().render(SAMPLE) == StockRenderer().render(SAMPLE)


def test_ignored_fields_keep_their_keys():
    body = CamelCaseJSONRenderer().render(SAMPLE)

    assert b'"customFields": {"policy_number": "P1"' in body or b'"customFields":{"policy_number":"P1"' in body
    assert b'"from_status"' in body


def test_keys_are_converted_like_the_library():
    assert camel_key("first_name") == "firstName"
    assert camel_key("address_line1") == "addressLine1"
    assert camel_key("plain") == "plain"
