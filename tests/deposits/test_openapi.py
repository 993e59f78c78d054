"""The deposits, payments and billing routes are described in the OpenAPI document."""

import pytest
from django.test import Client

from tests.deposits.helpers import link_path, make_patient, sent_deposit
from tests.helpers import assert_error

OPERATIONS = {
    ("/deposits", "get"): ["deposits"],
    ("/deposits", "post"): ["deposits"],
    ("/deposits/{id}", "get"): ["deposits"],
    ("/deposits/{id}", "patch"): ["deposits"],
    ("/deposits/{id}/send", "post"): ["deposits"],
    ("/deposits/{id}/cancel", "post"): ["deposits"],
    ("/l/{token}", "get"): ["payments"],
    ("/l/{token}/checkout", "post"): ["payments"],
    ("/webhooks/payments-connect", "post"): ["payments"],
    ("/webhooks/payments-connect/oauth/callback", "get"): ["payments"],
    ("/settings/payments", "get"): ["settings", "payments"],
    ("/settings/payments/connect", "post"): ["settings", "payments"],
    ("/auth/payments-billing/webhook", "post"): ["billing"],
}
PUBLIC = {
    "/l/{token}",
    "/l/{token}/checkout",
    "/webhooks/payments-connect",
    "/webhooks/payments-connect/oauth/callback",
    "/auth/payments-billing/webhook",
}


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        response = Client().get("/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_every_operation_is_documented_with_its_tags_and_errors(schema):
    for (path, method), tags in OPERATIONS.items():
        operation = schema["paths"][path][method]
        assert operation["tags"] == tags, (path, method)
        assert operation["summary"] and operation["description"], (path, method)
        assert {"400", "404"} <= set(operation["responses"]), (path, method)
        if path in PUBLIC:
            assert operation.get("security") in (None, [{}]), (path, method)
        else:
            assert {"401", "403"} <= set(operation["responses"]), (path, method)
    for path in ("/deposits/{id}/send", "/deposits/{id}/cancel", "/l/{token}/checkout"):
        assert "409" in schema["paths"][path]["post"]["responses"]
    assert "413" in schema["paths"]["/webhooks/payments-connect"]["post"]["responses"]


def test_wire_names_are_camel_case(schema):
    deposit = schema["components"]["schemas"]["DepositRequest"]["properties"]
    assert {"patientId", "journeyId", "refundedAmount", "patientLink", "linkExpiresAt", "paidAt"} <= set(deposit)
    assert schema["components"]["schemas"]["DepositStatusEnum"]["enum"] == [
        "draft",
        "sent",
        "paid",
        "expired",
        "cancelled",
        "refunded",
    ]


def test_the_patient_link_has_the_public_abuse_screen(owner, api, settings):
    settings.SVC_PUBLIC_SCREEN_RATE = "3/m"
    path = link_path(sent_deposit(api, make_patient(owner.organization)))
    for _ in range(3):
        assert Client(REMOTE_ADDR="203.0.113.9").get(path).status_code == 200
    limited = assert_error(Client(REMOTE_ADDR="203.0.113.9").get(path), 429, "RATE_LIMITED")
    assert limited is not None
    assert Client(REMOTE_ADDR="203.0.113.10").get(path).status_code == 200
