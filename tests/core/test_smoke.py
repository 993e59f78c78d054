def test_runtime_health_answers_204_without_body(client):
    response = client.get("/health/runtime")
    assert response.status_code == 204
    assert response.content == b""


def test_owner_api_key_reads_auth_me(api, owner):
    response = api.get("/auth/me")
    assert response.status_code == 200
    assert response.json()["organization"]["id"] == str(owner.organization.id)
