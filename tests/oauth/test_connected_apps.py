"""GET/DELETE /connected-apps: any member lists the practice's connections; disconnecting ends the tokens at once
and archives the connection's webhook endpoints; tenancy."""

from apps.oauth.models import Connection
from apps.webhooks.models import WebhookEndpoint
from apps.webhooks.services import endpoint_create
from tests.helpers import assert_error
from tests.oauth.tokens import application, bearer, mint


def test_any_member_lists_the_practices_connections_newest_first(owner, member_factory):
    _, first = mint(owner, app=application("Scheduler"))
    _, second = mint(owner, "read offline_access", app=application("Agent", dynamic=True))
    dentist = member_factory(role="dentist", organization=owner.organization)
    response = dentist.session_client().get("/connected-apps")
    assert response.status_code == 200, response.content
    body = response.json()
    assert [item["id"] for item in body["items"]] == [str(second.connection_id), str(first.connection_id)]
    assert body["nextCursor"] is None
    agent = body["items"][0]
    assert agent["applicationName"] == "Agent" and agent["verified"] is False
    assert agent["scopes"] == ["offline_access", "read"]
    assert agent["userEmail"] == owner.user.email and agent["mine"] is False


def test_the_list_pages_and_hides_other_practices_and_disconnected_ones(owner, outsider):
    for n in range(3):
        mint(owner, app=application(f"App {n}"))
    mint(outsider)
    _, gone = mint(owner, app=application("Gone"))
    from apps.oauth import connections

    connections.disconnect(gone.connection)
    client = owner.session_client()
    page = client.get("/connected-apps?limit=2").json()
    assert len(page["items"]) == 2 and page["nextCursor"]
    rest = client.get(f"/connected-apps?limit=2&cursor={page['nextCursor']}").json()
    names = {i["applicationName"] for i in page["items"] + rest["items"]}
    assert names == {"App 0", "App 1", "App 2"}


def test_disconnecting_ends_the_tokens_and_archives_the_connections_endpoints(owner):
    raw, token = mint(owner)
    endpoint = endpoint_create(
        organization=owner.organization,
        user=owner.user,
        name="Agent hook",
        url="https://hooks.example.com/x",
        events=["patient.created"],
        connection_id=token.connection_id,
    ).endpoint
    kept = endpoint_create(
        organization=owner.organization,
        user=owner.user,
        name="Own hook",
        url="https://hooks.example.com/y",
        events=["patient.created"],
    ).endpoint
    assert bearer(raw).get("/patients").status_code == 200
    response = owner.session_client().delete(f"/connected-apps/{token.connection_id}")
    assert response.status_code == 200, response.content
    assert_error(bearer(raw).get("/patients"), 401, "UNAUTHENTICATED")
    assert WebhookEndpoint.objects.unscoped().get(pk=endpoint.pk).archived_at is not None
    assert WebhookEndpoint.objects.unscoped().get(pk=kept.pk).archived_at is None
    assert Connection.objects.unscoped().get(pk=token.connection_id).revoked_at is not None
    # Gone from the list, and a second delete is a 404.
    assert owner.session_client().get("/connected-apps").json()["items"] == []
    assert_error(owner.session_client().delete(f"/connected-apps/{token.connection_id}"), 404, "NOT_FOUND")


def test_another_members_connection_needs_settings_update(owner, member_factory):
    _, token = mint(owner)
    front_desk = member_factory(role="front_desk", organization=owner.organization)
    assert_error(front_desk.session_client().delete(f"/connected-apps/{token.connection_id}"), 403, "PERMISSION_DENIED")
    manager = member_factory(role="manager", organization=owner.organization)
    assert manager.session_client().delete(f"/connected-apps/{token.connection_id}").status_code == 200


def test_your_own_connection_needs_no_settings_permission(member_factory):
    analyst = member_factory(role="analyst")
    _, token = mint(analyst)
    assert analyst.session_client().delete(f"/connected-apps/{token.connection_id}").status_code == 200


def test_a_token_can_disconnect_itself(owner):
    raw, token = mint(owner, "settings.write")
    assert bearer(raw).delete(f"/connected-apps/{token.connection_id}").status_code == 200
    assert bearer(raw).get("/connected-apps").status_code == 401


def test_another_practices_connection_is_404(owner, outsider):
    _, token = mint(outsider)
    assert_error(owner.session_client().delete(f"/connected-apps/{token.connection_id}"), 404, "NOT_FOUND")
    assert Connection.objects.unscoped().get(pk=token.connection_id).revoked_at is None
    assert_error(owner.api_client().delete(f"/connected-apps/{token.connection_id}"), 404, "NOT_FOUND")
