"""Templates and campaigns routes are described in the OpenAPI document (MCP's operation catalogue is built from it)."""

import pytest
from django.test import Client

TEMPLATE_OPERATIONS = {
    ("/templates", "get"),
    ("/templates", "post"),
    ("/templates/{id}", "get"),
    ("/templates/{id}", "patch"),
    ("/templates/{id}", "delete"),
    ("/templates/{id}/approval", "post"),
    ("/templates/{id}/preview", "get"),
    ("/templates/{id}/send", "post"),
}
CAMPAIGN_OPERATIONS = {
    ("/campaigns", "get"),
    ("/campaigns", "post"),
    ("/campaigns/{id}", "get"),
    ("/campaigns/{id}", "patch"),
    ("/campaigns/{id}", "delete"),
    ("/campaigns/{id}/launch", "post"),
    ("/campaigns/{id}/pause", "post"),
    ("/campaigns/{id}/resume", "post"),
    ("/campaigns/{id}/cancel", "post"),
    ("/campaigns/{id}/recipients", "get"),
    ("/campaigns/{id}/test-send", "post"),
    ("/marketing/unsubscribe/{token}", "get"),
    ("/marketing/unsubscribe/{token}", "post"),
}


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        response = Client().get("/openapi.json")
    assert response.status_code == 200
    return response.json()


def tagged(schema, tag: str) -> set:
    return {
        (path, method)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if tag in operation.get("tags", [])
    }


def test_every_operation_is_documented_under_its_tag(schema):
    assert tagged(schema, "templates") == TEMPLATE_OPERATIONS
    assert tagged(schema, "campaigns") == CAMPAIGN_OPERATIONS
    for path, method in TEMPLATE_OPERATIONS | CAMPAIGN_OPERATIONS:
        operation = schema["paths"][path][method]
        assert operation["summary"] and operation["description"], (path, method)
        assert {"400", "403", "404", "429"} <= set(operation["responses"]), (path, method)
        if path.startswith("/marketing/"):
            assert not operation.get("security") or operation["security"] == [{}]
        else:
            assert "401" in operation["responses"] and operation["security"], (path, method)
    for action in ("launch", "pause", "resume", "cancel", "test-send"):
        assert "409" in schema["paths"][f"/campaigns/{{id}}/{action}"]["post"]["responses"]


def test_wire_names_are_camel_case(schema):
    components = schema["components"]["schemas"]
    assert {"providerTemplateName", "approvalStatus", "createdById"} <= set(components["MessageTemplate"]["properties"])
    assert {"hourlyLimit", "dailyLimit", "nextReleaseAt", "totals", "skippedReasons"} <= set(
        components["CampaignDetail"]["properties"]
    )
    assert {"skipReason", "unsubscribedAt", "errorCode"} <= set(components["CampaignRecipient"]["properties"])
    assert components["MessageTemplateCreateRequest"]["additionalProperties"] is False
    parameters = {p["name"] for p in schema["paths"]["/templates"]["get"]["parameters"]}
    assert {"channel", "category", "approvalStatus", "limit", "offset"} <= parameters
