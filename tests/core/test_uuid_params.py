"""The spec's UUID pattern: versions 1 to 8 with the RFC variant (8, 9, a, b), or the all-zero and all-f forms."""

import uuid

import pytest
from django.test import Client

from apps.core.uuids import is_valid_uuid, parse_uuid

VALID = [
    pytest.param("6ba7b810-9dad-11d1-80b4-00c04fd430c8", id="v1"),
    pytest.param("000003e8-9dad-21d1-9000-00c04fd430c8", id="v2"),
    pytest.param("6fa459ea-ee8a-3ca4-894e-db77e160355e", id="v3"),
    pytest.param("7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b", id="v4"),
    pytest.param("2ed6657d-e927-568b-95e1-2665a8aea6a2", id="v5"),
    pytest.param("1ec9414c-232a-6b00-b3c8-9e6bdeced846", id="v6"),
    pytest.param("017f22e2-79b0-7cc3-98c4-dc0c0c07398f", id="v7"),
    pytest.param("320c3d4d-cc00-875b-8ec9-32d5f69181c0", id="v8"),
    pytest.param("7D444840-9DC0-41C6-A2B5-3E5C4F3E9A1B", id="uppercase"),
    pytest.param("7d444840-9DC0-41c6-A2b5-3e5c4f3e9a1b", id="mixed-case"),
    pytest.param("00000000-0000-0000-0000-000000000000", id="nil"),
    pytest.param("ffffffff-ffff-ffff-ffff-ffffffffffff", id="max"),
    pytest.param("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", id="max-uppercase"),
]

INVALID = [
    pytest.param("7d444840-9dc0-01c6-a2b5-3e5c4f3e9a1b", id="version-0"),
    pytest.param("7d444840-9dc0-91c6-a2b5-3e5c4f3e9a1b", id="version-9"),
    pytest.param("7d444840-9dc0-f1c6-a2b5-3e5c4f3e9a1b", id="version-f"),
    pytest.param("7d444840-9dc0-41c6-72b5-3e5c4f3e9a1b", id="variant-7-ncs"),
    pytest.param("7d444840-9dc0-41c6-c2b5-3e5c4f3e9a1b", id="variant-c-microsoft"),
    pytest.param("7d444840-9dc0-41c6-e2b5-3e5c4f3e9a1b", id="variant-e"),
    pytest.param("7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1", id="35-chars"),
    pytest.param("7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1bc", id="37-chars"),
    pytest.param("{7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b}", id="braces"),
    pytest.param("urn:uuid:7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b", id="urn-prefix"),
    pytest.param("7d4448409dc041c6a2b53e5c4f3e9a1b", id="no-dashes"),
    pytest.param("7d444840-9dc041c6-a2b5-3e5c4f3e9a1b", id="missing-dash"),
    pytest.param("", id="empty"),
    pytest.param(" 7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b", id="leading-space"),
    pytest.param("7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b ", id="trailing-space"),
    pytest.param("7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b\n", id="trailing-newline"),
    pytest.param("7d444840-9dc0-41c6-a2b5-3e5c4f3e9g1b", id="non-hex"),
    pytest.param("00000000-0000-0000-0000-000000000001", id="almost-nil"),
    pytest.param("ffffffff-ffff-ffff-ffff-fffffffffffe", id="almost-max"),
    pytest.param("7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1٣", id="non-ascii-digit"),
]


@pytest.mark.parametrize("value", VALID)
def test_valid_uuid(value):
    assert is_valid_uuid(value) is True
    assert parse_uuid(value) == uuid.UUID(value)


@pytest.mark.parametrize("value", INVALID)
def test_invalid_uuid(value):
    assert is_valid_uuid(value) is False
    assert parse_uuid(value) is None


@pytest.mark.parametrize("value", [None, 7, uuid.UUID(int=0), b"7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b"])
def test_non_strings_are_not_uuids(value):
    assert is_valid_uuid(value) is False


# --- path parameters through HTTP (test route: things/<uuid_param:thing_id>, permission member:read) ------------

TEST_URLS = pytest.mark.urls("tests.core.urls_for_tests")


@TEST_URLS
@pytest.mark.parametrize(
    "bad", ["nope", "123", "7d444840-9dc0-01c6-a2b5-3e5c4f3e9a1b", "{7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b}"]
)
def test_bad_path_uuid_is_a_validation_error_naming_the_parameter_in_camel_case(api, bad):
    response = api.get(f"/things/{bad}")

    assert response.status_code == 400
    assert response.json() == {
        "code": "VALIDATION_ERROR",
        "message": "thingId: must be a UUID",
        "details": {"fields": {"thingId": ["must be a UUID"]}},
    }


@TEST_URLS
@pytest.mark.parametrize("thing_id", ["nope", "7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b"])
def test_unauthenticated_request_is_401_before_the_path_is_checked(db, thing_id):
    response = Client().get(f"/things/{thing_id}")

    assert response.status_code == 401
    assert response.json() == {
        "code": "UNAUTHENTICATED",
        "message": "Authentication credentials are missing, invalid or expired.",
        "details": {},
    }
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'


@TEST_URLS
def test_bad_api_key_is_401_before_the_path_is_checked(db):
    response = Client(headers={"Authorization": "Bearer svc_key_not-a-real-key"}).get("/things/nope")

    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHENTICATED"


@TEST_URLS
@pytest.mark.parametrize(
    "value",
    [
        "7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b",
        "7D444840-9DC0-41C6-A2B5-3E5C4F3E9A1B",
        "017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
    ],
)
def test_valid_path_uuid_reaches_the_view_as_a_uuid(api, value):
    response = api.get(f"/things/{value}")

    assert response.status_code == 200
    assert response.json() == {"id": str(uuid.UUID(value))}


@TEST_URLS
def test_valid_uuid_with_a_trailing_newline_in_the_path_is_a_validation_error(api):
    response = api.get("/things/7d444840-9dc0-41c6-a2b5-3e5c4f3e9a1b%0A")

    assert response.status_code == 400
    assert response.json() == {
        "code": "VALIDATION_ERROR",
        "message": "thingId: must be a UUID",
        "details": {"fields": {"thingId": ["must be a UUID"]}},
    }
