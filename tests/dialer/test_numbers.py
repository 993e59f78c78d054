"""/dialer/numbers: search (GET /v2/available_phone_numbers), order (POST /v2/number_orders; the per-practice bucket
of 60 then 18 an hour: 429 with Retry-After) and release (the number's id looked up, then DELETE
/v2/phone_numbers/{id}; never rate limited), through the real httpx client against a local Telnyx API."""

import pytest

from apps.dialer.models import PhoneNumber
from tests.conftest import make_member
from tests.dialer.conftest import (
    API_KEY,
    APP_ID,
    PRACTICE_NUMBER,
    InboundCall,
    TelnyxAccount,
    connect,
    order_number,
    post_json,
    telnyx_event,
)
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db


def numbers(owner):
    return PhoneNumber.objects.for_org(owner.organization)


def test_search_asks_the_provider_for_voice_numbers(owner, api, line, telnyx):
    response = api.get("/dialer/numbers/search?countryCode=IT&areaCode=02&locality=Milano&contains=555&limit=2")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "items": [
            {
                "phoneNumber": f"+39025550{n:03d}",
                "region": "Milano",
                "features": ["voice", "sms"],
                "monthlyCost": "1.50",
                "upfrontCost": "0.00",
                "currency": "EUR",
            }
            for n in range(2)
        ]
    }
    (sent,) = telnyx.calls("GET", "/v2/available_phone_numbers")
    assert sent["authorization"] == f"Bearer {API_KEY}"
    assert sorted(sent["query"]) == sorted(
        [
            ("filter[country_code]", "IT"),
            ("filter[features][]", "voice"),
            ("filter[limit]", "2"),
            ("filter[national_destination_code]", "02"),
            ("filter[locality]", "Milano"),
            ("filter[phone_number][contains]", "555"),
        ]
    )


def test_search_validation_and_provider_failures(owner, api, line, telnyx):
    for query, field in (
        ("", "countryCode"),
        ("countryCode=it", "countryCode"),
        ("countryCode=IT&limit=51", "limit"),
        ("countryCode=IT&areaCode=abc", "areaCode"),
        ("countryCode=IT&page=2", "page"),
    ):
        error = assert_error(api.get(f"/dialer/numbers/search?{query}"), 400, "VALIDATION_ERROR")
        assert field in error["details"]["fields"]
    assert not telnyx.calls("GET", "/v2/available_phone_numbers")
    telnyx.fail[("GET", "/v2/available_phone_numbers")] = (500, {"errors": [{"code": "10001"}]})
    assert_error(api.get("/dialer/numbers/search?countryCode=IT"), 503, "DIALER_PROVIDER_UNAVAILABLE")
    telnyx.fail[("GET", "/v2/available_phone_numbers")] = (400, {"errors": [{"code": "10015", "title": "Bad"}]})
    error = assert_error(api.get("/dialer/numbers/search?countryCode=IT"), 409, "DIALER_PROVIDER_REFUSED")
    assert error["details"] == {"providerCode": "10015"}


def test_search_and_order_need_a_connection(owner, api, account):
    assert_error(api.get("/dialer/numbers/search?countryCode=IT"), 409, "DIALER_NOT_CONNECTED")
    assert_error(post_json(api, "/dialer/numbers", {"phoneNumber": PRACTICE_NUMBER}), 409, "DIALER_NOT_CONNECTED")
    first, second = connect(api, account), connect(api, TelnyxAccount(), name="Second")
    error = assert_error(api.get("/dialer/numbers/search?countryCode=IT"), 400, "VALIDATION_ERROR")
    assert "connectionId" in error["details"]["fields"]
    assert api.get(f"/dialer/numbers/search?countryCode=IT&connectionId={second['id']}").status_code == 200
    made = order_number(api, connectionId=first["id"])
    assert made["connectionId"] == first["id"]


def test_ordering_a_number_attaches_it_to_the_call_control_application(owner, api, line, telnyx):
    body = order_number(api)
    row = numbers(owner).get()
    assert body == {
        "id": str(row.id),
        "connectionId": line["id"],
        "phoneNumber": PRACTICE_NUMBER,
        "status": "active",
        "source": "ordered",
        "portingOrderId": None,
        "portoutStatus": "",
        "createdAt": body["createdAt"],
        "releasedAt": None,
    }
    (sent,) = telnyx.calls("POST", "/v2/number_orders")
    assert sent["body"] == {
        "phone_numbers": [{"phone_number": PRACTICE_NUMBER}],
        "customer_reference": str(owner.organization.id),
        "connection_id": APP_ID,
    }
    assert row.provider_order_id
    # The same number again: 409, nothing ordered.
    assert_error(
        post_json(api, "/dialer/numbers", {"phoneNumber": PRACTICE_NUMBER}), 409, "DIALER_NUMBER_ALREADY_CONNECTED"
    )
    assert len(telnyx.calls("POST", "/v2/number_orders")) == 1
    listed = api.get("/dialer/numbers").json()
    assert (listed["total"], [item["id"] for item in listed["items"]]) == (1, [str(row.id)])
    assert api.get(f"/dialer/numbers/{row.id}").json()["phoneNumber"] == PRACTICE_NUMBER


def test_a_pending_order_becomes_active_with_the_number_order_event(owner, api, line, telnyx, deliver):
    telnyx.order_status = "pending"
    body = order_number(api, "+390288888888")
    assert body["status"] == "pending"
    row = numbers(owner).get()
    event = telnyx_event(
        "number_order.complete",
        {
            "id": row.provider_order_id,
            "status": "success",
            "phone_numbers": [{"phone_number": "+390288888888", "status": "success"}],
        },
    )
    assert deliver(event).status_code == 200
    row.refresh_from_db()
    assert row.status == "active"


def test_a_refused_order_keeps_nothing(owner, api, line, telnyx):
    telnyx.fail[("POST", "/v2/number_orders")] = (422, {"errors": [{"code": "10019", "title": "Not available"}]})
    error = assert_error(
        post_json(api, "/dialer/numbers", {"phoneNumber": PRACTICE_NUMBER}), 409, "DIALER_PROVIDER_REFUSED"
    )
    assert error["details"] == {"providerCode": "10019"}
    assert not numbers(owner).exists()
    for bad in ("0212345678", "+39", "+3902123456789012345", 390212345678):
        assert_error(post_json(api, "/dialer/numbers", {"phoneNumber": bad}), 400, "VALIDATION_ERROR")


def test_the_order_bucket_answers_429_with_retry_after_and_release_is_never_limited(owner, api, line, settings):
    settings.SVC_DIALER_NUMBER_ORDER_BUCKET = (2, 18 / 3600)
    first = order_number(api, "+390211111111")
    second = order_number(api, "+390222222222")
    response = post_json(api, "/dialer/numbers", {"phoneNumber": "+390233333333"})
    error = assert_error(response, 429, "RATE_LIMITED")
    # One token at 18 an hour is 200 s away (less the little refilled since the bucket emptied).
    assert error["details"] == {"retryAfter": int(response["Retry-After"])}
    assert 150 < int(response["Retry-After"]) <= 200
    assert numbers(owner).count() == 2
    # Invalid bodies are refused before the bucket (they take no token); releases are not limited.
    assert_error(post_json(api, "/dialer/numbers", {"phoneNumber": "nope"}), 400, "VALIDATION_ERROR")
    assert [api.delete(f"/dialer/numbers/{made['id']}").status_code for made in (first, second)] == [200, 200]
    assert set(numbers(owner).values_list("status", flat=True)) == {"released"}
    assert_error(post_json(api, "/dialer/numbers", {"phoneNumber": "+390233333333"}), 429, "RATE_LIMITED")
    # The bucket is the practice's: another practice orders freely.
    other = make_member(role="owner")
    connect(other.api_client(), TelnyxAccount())
    order_number(other.api_client(), "+390233333333")


def test_the_default_bucket_is_sixty_then_eighteen_an_hour(settings):
    from apps.dialer.api.views import NUMBER_ORDER_BUCKET

    assert NUMBER_ORDER_BUCKET.rate == (60, 18 / 3600)


def test_release_looks_the_number_up_and_deletes_it_on_the_account(owner, api, line, telnyx):
    made = order_number(api)
    response = api.delete(f"/dialer/numbers/{made['id']}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "released" and body["releasedAt"]
    (lookup,) = telnyx.calls("GET", "/v2/phone_numbers")
    assert lookup["query"] == [("filter[phone_number]", PRACTICE_NUMBER)]
    (deleted,) = telnyx.calls("DELETE", "/v2/phone_numbers/")
    assert deleted["path"] == f"/v2/phone_numbers/{telnyx.number_ids[PRACTICE_NUMBER]}"
    # Released: a second release is 409; the number can be ordered again.
    assert_error(api.delete(f"/dialer/numbers/{made['id']}"), 409, "DIALER_NUMBER_NOT_RELEASABLE")
    assert order_number(api)["status"] == "active"


def test_a_release_the_provider_cannot_do_keeps_the_number(owner, api, line, telnyx):
    made = order_number(api)
    telnyx.fail[("DELETE", "/v2/phone_numbers/")] = (502, {"errors": [{"code": "gateway"}]})
    assert_error(api.delete(f"/dialer/numbers/{made['id']}"), 503, "DIALER_PROVIDER_UNAVAILABLE")
    assert numbers(owner).get().status == "active"


def test_calls_to_a_released_number_are_parked(owner, api, line, number, deliver):
    api.delete(f"/dialer/numbers/{number['id']}")
    assert deliver(InboundCall().initiated()).json()["parked"] is True


def test_numbers_roles_and_tenancy(owner, api, line, number, outsider):
    desk = make_member(role="front_desk", organization=owner.organization).api_client()
    assert desk.get("/dialer/numbers").status_code == 200  # dialer:use reads them
    assert desk.get(f"/dialer/numbers/{number['id']}").status_code == 200
    assert_error(desk.get("/dialer/numbers/search?countryCode=IT"), 403, "PERMISSION_DENIED")
    assert_error(post_json(desk, "/dialer/numbers", {"phoneNumber": "+390244444444"}), 403, "PERMISSION_DENIED")
    assert_error(desk.delete(f"/dialer/numbers/{number['id']}"), 403, "PERMISSION_DENIED")
    analyst = make_member(role="analyst", organization=owner.organization).api_client()
    assert_error(analyst.get("/dialer/numbers"), 403, "PERMISSION_DENIED")
    other = outsider.api_client()
    assert other.get("/dialer/numbers").json()["items"] == []
    assert_error(other.get(f"/dialer/numbers/{number['id']}"), 404, "NOT_FOUND")
    assert_error(other.delete(f"/dialer/numbers/{number['id']}"), 404, "NOT_FOUND")
    assert_error(other.get(f"/dialer/numbers?connectionId={line['id']}"), 400, "VALIDATION_ERROR")
    connect(other, TelnyxAccount())
    assert_error(
        post_json(other, "/dialer/numbers", {"phoneNumber": "+390244444444", "connectionId": line["id"]}),
        400,
        "VALIDATION_ERROR",
    )
    assert numbers(owner).get().status == "active"
    assert not PhoneNumber.objects.for_org(outsider.organization).exists()


def test_the_lists_take_a_fixed_number_of_queries(owner, api, line, deliver, django_assert_max_num_queries):
    for n in range(4):
        order_number(api, f"+39021111000{n}")
        post_json(api, "/dialer/porting-orders", {"phoneNumbers": [f"+39022222000{n}"]})
        deliver(InboundCall(called=f"+39029999000{n}").initiated())  # parked
    connect(api, TelnyxAccount(), name="Second line")
    for path in ("/dialer/connections", "/dialer/numbers", "/dialer/porting-orders", "/dialer/parked-events"):
        with django_assert_max_num_queries(7):
            body = api.get(path).json()
        assert body["total"] == (2 if path == "/dialer/connections" else 4), path


@pytest.mark.parametrize("country", ["GB", "IT", "US"])
def test_the_sandbox_offers_numbers_that_order_as_offered(owner, api, line, settings, country):
    """make run's sandbox: every number it offers is already E.164, so the number ordered is the number shown."""
    settings.SVC_TELEPHONY_TRANSPORT = "sandbox"
    found = api.get(f"/dialer/numbers/search?countryCode={country}&limit=3&connectionId={line['id']}")
    assert found.status_code == 200, found.content
    offered = found.json()["items"][0]["phoneNumber"]
    ordered = api.post(
        "/dialer/numbers", {"connectionId": line["id"], "phoneNumber": offered}, content_type="application/json"
    )
    assert ordered.status_code == 201, ordered.content
    assert ordered.json()["phoneNumber"] == offered
