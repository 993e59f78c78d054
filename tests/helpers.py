"""Assertions shared by the HTTP tests."""


def assert_error(response, status: int, code: str) -> dict:
    """The response is the ApiError envelope with this status and code; returns the body."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"code", "message", "details"}, body
    assert body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["details"], dict)
    return body
