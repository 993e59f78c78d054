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


# --- the orjson writer: the stock renderer's JSON for every kind of value the API renders ------------------------


def _payloads():
    from django.utils.translation import gettext_lazy
    from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

    from apps.journeys.models import JourneyStatus

    rome = datetime.datetime(2025, 7, 1, 9, 30, 5, 123456, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    return [
        SAMPLE,
        {
            "code": "VALIDATION_ERROR",
            "message": gettext_lazy("Invalid input."),
            "details": {"fields": {"firstName": ["x"]}},
        },
        {"code": "INTERNAL_ERROR", "message": "Something went wrong.", "details": {"error_id": "abc"}},
        ReturnDict({"first_name": "Zoë", "last_name": "Müller-Łukasz 日本 😀"}, serializer=None),
        ReturnList([{"line_sep": "a\u2028b\u2029c", "quote": 'he said "hi"\\ \n\t\x01'}], serializer=None),
        {
            "created_at": datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC),
            "with_micros": datetime.datetime(2025, 1, 1, 0, 0, 0, 1000, tzinfo=datetime.UTC),
            "offset": rome,
            "naive": datetime.datetime(2025, 1, 1, 8, 0),
            "time_of_day": datetime.time(8, 30),
            "time_micros": datetime.time(8, 30, 0, 5),
            "duration": datetime.timedelta(minutes=90),
            "amount": decimal.Decimal("1250.00"),
            "small": decimal.Decimal("0.1"),
            "status": JourneyStatus.OPEN,
            "lazy": gettext_lazy("This field is required."),
            gettext_lazy("lazy_key"): 1,
            "nested_list": [[{"inner_key": [1, {"deep_key": None}]}]],
            "generator_like": (x for x in ("a_b", {"k_k": 1})),
            "ids": [uuid.UUID(int=5), uuid.UUID("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")],
            "flags": [True, False, None],
            "numbers": [0, -1, 2**63 - 1, 1.5, -0.25, 1e-7, 123456789.125],
            "empty": {},
            "empty_list": [],
            "submitted_fields": {"first_name": "kept", "utm_source": ("a", "b")},
        },
        {"big": 2**70, 3: "int key"},  # beyond orjson: the standard library path
        [],
        "plain string",
        42,
    ]


def test_orjson_output_equals_the_stock_renderer_parsed_and_in_key_order():
    import json

    for index in range(len(_payloads())):  # built afresh for each renderer: generators are consumed
        ours = CamelCaseJSONRenderer().render(_payloads()[index])
        stock = StockRenderer().render(_payloads()[index])
        parsed_ours = json.loads(ours, object_pairs_hook=list)
        parsed_stock = json.loads(stock, object_pairs_hook=list)
        assert parsed_ours == parsed_stock, index  # pairs lists: equal values and the same key order


def test_orjson_output_is_byte_identical_where_floats_agree():
    for index in (0, 1, 2, 3, 4, 6, 7, 8, 9):
        assert CamelCaseJSONRenderer().render(_payloads()[index]) == StockRenderer().render(_payloads()[index]), index


def test_none_renders_empty_and_indent_takes_the_stdlib_path():
    assert CamelCaseJSONRenderer().render(None) == b""
    indented = CamelCaseJSONRenderer().render({"a_b": 1}, "application/json; indent=2")
    assert indented == StockRenderer().render({"a_b": 1}, "application/json; indent=2")
    assert indented == b'{\n  "aB": 1\n}'
