"""Porting: POST /dialer/porting-orders (POST /v2/porting_orders, which may split an order by carrier), the status
kept current by porting_order.* events (ported: the numbers become the practice's), and portout.* events."""

from datetime import timedelta

import pytest

from apps.dialer.models import EventState, PhoneNumber, PortingOrder, TelephonyEvent
from tests.conftest import make_member
from tests.dialer.conftest import API_KEY, T0, post_json, telnyx_event
from tests.helpers import assert_error

pytestmark = pytest.mark.django_db

NUMBERS = ["+390211100001", "+390211100002"]


def status_event(order_id: str, status: str, *, at=T0, event_type="porting_order.status_changed") -> dict:
    payload = {"id": order_id, "status": {"value": status, "details": []}, "customer_reference": "x"}
    return telnyx_event(event_type, payload, at=at)


def test_a_porting_order_is_created_with_the_provider_and_split_by_carrier(owner, api, line, telnyx):
    response = post_json(api, "/dialer/porting-orders", {"phoneNumbers": [*NUMBERS, NUMBERS[0]]})
    assert response.status_code == 201, response.content
    items = response.json()["items"]
    (sent,) = telnyx.calls("POST", "/v2/porting_orders")
    assert sent["body"] == {"phone_numbers": NUMBERS} and sent["authorization"] == f"Bearer {API_KEY}"
    assert [item["phoneNumbers"] for item in items] == [[NUMBERS[0]], [NUMBERS[1]]]
    assert {item["status"] for item in items} == {"draft"}
    orders = PortingOrder.objects.for_org(owner.organization)
    assert orders.count() == 2
    listed = api.get("/dialer/porting-orders").json()
    assert listed["total"] == 2
    assert api.get(f"/dialer/porting-orders/{items[0]['id']}").json()["providerOrderId"] == items[0]["providerOrderId"]


def test_porting_events_move_the_order_and_a_ported_order_brings_its_numbers(owner, api, line, deliver):
    (order,) = post_json(api, "/dialer/porting-orders", {"phoneNumbers": NUMBERS}).json()["items"]
    provider_id = order["providerOrderId"]
    assert deliver(status_event(provider_id, "submitted", at=T0)).json()["parked"] is False
    assert api.get(f"/dialer/porting-orders/{order['id']}").json()["status"] == "submitted"
    # An older event arriving late changes nothing.
    deliver(status_event(provider_id, "draft", at=T0 - timedelta(minutes=5)))
    assert api.get(f"/dialer/porting-orders/{order['id']}").json()["status"] == "submitted"
    # Other porting events are recorded without a status change.
    deliver(
        telnyx_event(
            "porting_order.new_comment", {"id": provider_id, "comment": {"body": "LOA"}}, at=T0 + timedelta(minutes=1)
        )
    )
    body = api.get(f"/dialer/porting-orders/{order['id']}").json()
    assert (body["status"], body["lastEventType"]) == ("submitted", "porting_order.new_comment")

    deliver(status_event(provider_id, "ported", at=T0 + timedelta(hours=2)))
    body = api.get(f"/dialer/porting-orders/{order['id']}").json()
    assert body["status"] == "ported"
    ported = PhoneNumber.objects.for_org(owner.organization).order_by("phone_number")
    assert [(n.phone_number, n.status, n.source, str(n.porting_order_id)) for n in ported] == [
        (NUMBERS[0], "active", "ported", order["id"]),
        (NUMBERS[1], "active", "ported", order["id"]),
    ]
    # Replaying "ported" (another event id) adds nothing.
    deliver(status_event(provider_id, "ported", at=T0 + timedelta(hours=3)))
    assert PhoneNumber.objects.for_org(owner.organization).count() == 2


def test_a_porting_event_for_an_order_not_here_is_parked(owner, line, deliver):
    assert deliver(status_event("00000000-0000-4000-8000-000000000000", "ported")).json()["parked"] is True
    assert TelephonyEvent.objects.for_org(owner.organization).get().state == EventState.PARKED


def test_a_deleted_order_is_cancelled(owner, api, line, deliver):
    (order,) = post_json(api, "/dialer/porting-orders", {"phoneNumbers": NUMBERS[:1]}).json()["items"]
    deliver(telnyx_event("porting_order.deleted", {"id": order["providerOrderId"]}))
    assert api.get(f"/dialer/porting-orders/{order['id']}").json()["status"] == "cancelled"


def test_portout_events_record_the_port_out_and_a_ported_number_is_gone(owner, api, number, deliver):
    def portout(status: str) -> dict:
        payload = {"id": "po-1", "status": status, "phone_numbers": [number["phoneNumber"]], "carrier_name": "Other"}
        return telnyx_event("portout.status_changed", payload)

    deliver(portout("authorized"))
    body = api.get(f"/dialer/numbers/{number['id']}").json()
    assert (body["status"], body["portoutStatus"]) == ("active", "authorized")
    deliver(portout("ported"))
    body = api.get(f"/dialer/numbers/{number['id']}").json()
    assert (body["status"], body["portoutStatus"]) == ("ported_out", "ported")
    # A port-out of a number not connected here is parked.
    stray = telnyx_event("portout.status_changed", {"id": "po-2", "status": "pending", "phone_numbers": ["+4420"]})
    assert deliver(stray).json()["parked"] is True


def test_porting_validation_roles_and_tenancy(owner, api, line, number, outsider, telnyx):
    for body in ({"phoneNumbers": []}, {"phoneNumbers": ["0211"]}, {"phoneNumbers": ["+3902"] * 51}, {}):
        assert_error(post_json(api, "/dialer/porting-orders", body), 400, "VALIDATION_ERROR")
    assert_error(
        post_json(api, "/dialer/porting-orders", {"phoneNumbers": [number["phoneNumber"]]}),
        409,
        "DIALER_NUMBER_ALREADY_CONNECTED",
    )
    assert not telnyx.calls("POST", "/v2/porting_orders")
    (order,) = post_json(api, "/dialer/porting-orders", {"phoneNumbers": NUMBERS[:1]}).json()["items"]
    desk = make_member(role="front_desk", organization=owner.organization).api_client()
    assert desk.get("/dialer/porting-orders").status_code == 200
    assert_error(post_json(desk, "/dialer/porting-orders", {"phoneNumbers": NUMBERS}), 403, "PERMISSION_DENIED")
    other = outsider.api_client()
    assert other.get("/dialer/porting-orders").json()["items"] == []
    assert_error(other.get(f"/dialer/porting-orders/{order['id']}"), 404, "NOT_FOUND")
    assert_error(
        post_json(other, "/dialer/porting-orders", {"phoneNumbers": NUMBERS, "connectionId": line["id"]}),
        400,
        "VALIDATION_ERROR",
    )
    assert PortingOrder.objects.for_org(owner.organization).count() == 1
