"""The OAuth back office: connections (token values never shown) with a disconnect action; DOT's own token, grant
and ID-token pages are gone, its application page stays."""

import pytest

from apps.oauth.models import AccessToken, Connection, RefreshToken
from tests.helpers import assert_error
from tests.oauth.conftest import assert_archived_with_failed_deliveries, refresh
from tests.oauth.tokens import bearer

CHANGELIST = "/admin/oauth/connection/"
# admin_client: pytest-django's signed-in superuser.


@pytest.fixture
def connection(tokens) -> Connection:
    return Connection.objects.unscoped().select_related("application").get()


def token_values(tokens) -> list[str]:
    """Everything that would let someone act as the connection: the raw tokens and their stored checksums."""
    stored = [row.token_checksum for row in (*AccessToken.objects.all(), *RefreshToken.objects.all())]
    return [tokens["access_token"], tokens["refresh_token"], *stored]


def test_the_changelist_and_change_page_render_without_token_values(admin_client, tokens, connection, owner):
    for path in (CHANGELIST, f"{CHANGELIST}{connection.pk}/change/", f"{CHANGELIST}?q={owner.user.email}"):
        response = admin_client.get(path)
        assert response.status_code == 200, path
        page = response.content.decode()
        assert owner.user.email in page
        for value in token_values(tokens):
            assert value not in page, path


def test_connections_are_not_added_by_hand(admin_client, db):
    assert admin_client.get(f"{CHANGELIST}add/").status_code == 403


@pytest.mark.parametrize(
    "path",
    [
        "/admin/oauth/accesstoken/",
        "/admin/oauth/refreshtoken/",
        "/admin/oauth/grant/",
        "/admin/oauth2_provider/idtoken/",
    ],
)
def test_dots_token_pages_are_gone(admin_client, tokens, path):
    assert admin_client.get(path).status_code == 404


def test_the_application_and_client_profile_pages_stay(admin_client, tokens, connection):
    assert admin_client.get("/admin/oauth2_provider/application/").status_code == 200
    assert (
        admin_client.get(f"/admin/oauth2_provider/application/{connection.application.pk}/change/").status_code == 200
    )
    assert admin_client.get("/admin/oauth/clientprofile/").status_code == 200


def test_the_disconnect_action(admin_client, tokens, connection, connection_endpoint):
    endpoint, delivery = connection_endpoint(connection)
    assert bearer(tokens["access_token"]).get("/patients").status_code == 200

    response = admin_client.post(
        CHANGELIST, {"action": "disconnect", "_selected_action": [str(connection.pk)]}, follow=True
    )

    assert response.status_code == 200
    assert "Disconnected 1 connection(s)." in response.content.decode()
    connection.refresh_from_db()
    assert connection.revoked_at is not None
    assert not AccessToken.objects.filter(connection=connection).exists()
    assert not RefreshToken.objects.filter(connection=connection, revoked__isnull=True).exists()
    assert_archived_with_failed_deliveries(endpoint, delivery)
    # The next request of the app is refused; so is its refresh.
    assert_error(bearer(tokens["access_token"]).get("/patients"), 401, "UNAUTHENTICATED")
    assert refresh(tokens["client_id"], tokens["refresh_token"]).json()["error"] == "invalid_grant"


def test_disconnecting_twice_counts_only_live_connections(admin_client, connection):
    admin_client.post(CHANGELIST, {"action": "disconnect", "_selected_action": [str(connection.pk)]})
    revoked_at = Connection.objects.unscoped().get().revoked_at
    again = admin_client.post(
        CHANGELIST, {"action": "disconnect", "_selected_action": [str(connection.pk)]}, follow=True
    )
    assert "Disconnected 0 connection(s)." in again.content.decode()
    assert Connection.objects.unscoped().get().revoked_at == revoked_at
