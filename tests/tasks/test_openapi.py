"""Tasks routes are described in the OpenAPI document (MCP's operation catalogue is built from it)."""

import pytest
from django.test import Client

OPERATIONS = {
    ("/tasks", "get"),
    ("/tasks", "post"),
    ("/tasks/{id}", "get"),
    ("/tasks/{id}", "patch"),
    ("/tasks/{id}/complete", "post"),
    ("/tasks/{id}/reopen", "post"),
    ("/tasks/{id}/cancel", "post"),
}


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        response = Client().get("/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_every_tasks_operation_is_documented_under_the_tasks_tag(schema):
    documented = {
        (path, method)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "tasks" in operation.get("tags", [])
    }
    assert documented == OPERATIONS
    for path, method in OPERATIONS:
        responses = schema["paths"][path][method]["responses"]
        assert {"400", "401", "403", "404"} <= set(responses), (path, method)
    for action in ("complete", "reopen", "cancel"):
        assert "409" in schema["paths"][f"/tasks/{{id}}/{action}"]["post"]["responses"]


def test_wire_names_are_camel_case(schema):
    task = schema["components"]["schemas"]["Task"]["properties"]
    assert {"dueAt", "assigneeId", "patientId", "completedAt", "cancelledAt", "createdById"} <= set(task)
    parameters = {p["name"] for p in schema["paths"]["/tasks"]["get"]["parameters"]}
    assert {"view", "assigneeId", "patientId", "status", "priority", "dueBefore", "dueAfter", "limit", "offset"} <= (
        parameters
    )
