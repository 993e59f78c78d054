"""token, revoke and introspect: code refusals, refresh rules and response fields, the address-block window."""

from datetime import timedelta

import pytest
import time_machine
from django.test import Client, override_settings
from django.utils import timezone

from apps.oauth.models import AccessToken, Connection, RefreshToken
from tests.factories import DEFAULT_PASSWORD
from tests.helpers import assert_error
from tests.oauth.conftest import (
    INTROSPECT,
    REVOKE,
    TOKEN,
    assert_archived_with_failed_deliveries,
    code_for,
    exchange,
    new_authorization,
    pkce,
    refresh,
)
from tests.oauth.tokens import bearer


def _oauth_error(response, status, error):
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == error, body
    return body


def test_wrong_verifier_is_invalid_grant(signed_in, app_client_id):
    authorization = new_authorization(app_client_id)
    code = code_for(signed_in, authorization)
    _oauth_error(exchange(authorization, code, code_verifier=pkce()[0]), 400, "invalid_grant")
    _oauth_error(exchange(authorization, code, code_verifier=None), 400, "invalid_request")
    assert not AccessToken.objects.exists()


def test_code_is_single_use(signed_in, app_client_id):
    authorization = new_authorization(app_client_id)
    code = code_for(signed_in, authorization)
    assert exchange(authorization, code).status_code == 200
    _oauth_error(exchange(authorization, code), 400, "invalid_grant")


def test_a_replayed_code_revokes_every_token_it_issued(signed_in, app_client_id):
    """RFC 6749 §4.1.2: a second use of a code means it leaked; what it bought (rotations included) stops working,
    at once and together. Another consent of the same app (same connection) keeps its tokens."""
    authorization = new_authorization(app_client_id)
    code = code_for(signed_in, authorization)
    first = exchange(authorization, code).json()
    rotated = refresh(app_client_id, first["refresh_token"]).json()
    other_authorization = new_authorization(app_client_id)
    other = exchange(other_authorization, code_for(signed_in, other_authorization)).json()
    assert bearer(rotated["access_token"]).get("/auth/me").status_code == 200

    with time_machine.travel(timezone.now() + timedelta(minutes=5)):  # long after the code itself expired
        _oauth_error(exchange(authorization, code), 400, "invalid_grant")

    assert_error(bearer(rotated["access_token"]).get("/auth/me"), 401, "UNAUTHENTICATED")
    _oauth_error(refresh(app_client_id, rotated["refresh_token"]), 400, "invalid_grant")
    assert bearer(other["access_token"]).get("/auth/me").status_code == 200
    assert refresh(app_client_id, other["refresh_token"]).status_code == 200
    assert Connection.objects.unscoped().get().revoked_at is None


def test_a_code_exchanged_twice_at_once_leaves_no_token(signed_in, app_client_id, monkeypatch):
    """Two exchanges of one code racing: both pass validation, the second to mark the code finds it taken, and
    every token of that code goes, the winner's too."""
    from apps.oauth.validators import PracticeValidator

    authorization = new_authorization(app_client_id)
    code = code_for(signed_in, authorization)
    save = PracticeValidator.save_bearer_token
    raced = {}

    def save_then_race(self, token, request, *args, **kwargs):
        result = save(self, token, request, *args, **kwargs)
        if "winner" not in raced:  # the first has its tokens but has not marked the code yet: the second runs now
            raced["winner"] = None
            raced["winner"] = exchange(authorization, code)
        return result

    monkeypatch.setattr(PracticeValidator, "save_bearer_token", save_then_race)
    loser = exchange(authorization, code)
    winner = raced["winner"]
    assert winner.status_code == 200, winner.content
    _oauth_error(loser, 400, "invalid_grant")
    assert loser["Cache-Control"] == "no-store"
    assert_error(bearer(winner.json()["access_token"]).get("/auth/me"), 401, "UNAUTHENTICATED")
    _oauth_error(refresh(app_client_id, winner.json()["refresh_token"]), 400, "invalid_grant")
    assert not AccessToken.objects.exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_expired_code_is_refused(signed_in, app_client_id):
    authorization = new_authorization(app_client_id)
    code = code_for(signed_in, authorization)
    with time_machine.travel(timezone.now() + timezone.timedelta(seconds=61)):
        _oauth_error(exchange(authorization, code), 400, "invalid_grant")


def test_wrong_redirect_uri_at_the_token_endpoint(signed_in, app_client_id):
    authorization = new_authorization(app_client_id)
    code = code_for(signed_in, authorization)
    _oauth_error(exchange(authorization, code, redirect_uri="http://127.0.0.1:9/other"), 400, "invalid_request")


def test_unknown_client_and_another_clients_code(signed_in, app_client_id):
    from tests.oauth.conftest import register_client

    authorization = new_authorization(app_client_id)
    code = code_for(signed_in, authorization)
    _oauth_error(exchange(authorization, code, client_id="nobody"), 401, "invalid_client")
    _oauth_error(exchange(authorization, code, client_id=register_client()), 400, "invalid_grant")


def test_no_password_or_client_credentials_grant(app_client_id, owner):
    from oauth2_provider.models import Application

    _oauth_error(
        Client().post(TOKEN, {"grant_type": "client_credentials", "client_id": app_client_id}), 401, "invalid_client"
    )
    for grant in ("client-credentials", "password"):
        machine = Application.objects.create(
            name="machine", client_type="confidential", authorization_grant_type=grant, client_secret="s3cret-value"
        )
        body = {"grant_type": grant.replace("-", "_"), "username": owner.user.email, "password": DEFAULT_PASSWORD}
        response = Client().post(TOKEN, body | {"client_id": machine.client_id, "client_secret": "s3cret-value"})
        _oauth_error(response, 400, "unauthorized_client")
    assert not AccessToken.objects.exists()


def test_token_response_fields(owner, tokens):
    assert set(tokens) >= {
        "access_token",
        "refresh_token",
        "token_type",
        "expires_in",
        "scope",
        "api_base_url",
        "organization_id",
        "organization_name",
        "organization_country",
    }
    assert tokens["access_token"].startswith("svc_oat_eu_") and tokens["refresh_token"].startswith("svc_ort_eu_")
    assert tokens["organization_name"] == owner.organization.name
    assert tokens["api_base_url"] == "http://localhost:8787"


def test_only_hashes_are_stored(tokens):
    for row in list(AccessToken.objects.all()) + list(RefreshToken.objects.all()):
        assert row.token == "" and row.token_checksum


def test_no_refresh_token_without_offline_access(signed_in, app_client_id):
    authorization = new_authorization(app_client_id, scope="read")
    response = exchange(authorization, code_for(signed_in, authorization))
    assert response.status_code == 200
    body = response.json()
    assert "refresh_token" not in body and body["scope"] == "read"
    assert not RefreshToken.objects.exists()


def test_refresh_rotates_and_keeps_the_practice(owner, tokens):
    response = refresh(tokens["client_id"], tokens["refresh_token"])
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"access_token", "refresh_token", "token_type", "expires_in", "scope", "organization_country"}
    newest = AccessToken.objects.order_by("-created").first()
    assert newest.organization_id == owner.organization.id and newest.connection_id is not None
    _oauth_error(refresh(tokens["client_id"], tokens["refresh_token"]), 400, "invalid_grant")
    _oauth_error(refresh(tokens["client_id"], body["refresh_token"]), 400, "invalid_grant")  # family revoked


# --- refresh token lifetime: 30 days from its own issue (spec OAuth rule 2) ------------------------------------------

REFRESH_LIFETIME = timedelta(days=30)


def test_a_refresh_token_is_good_until_just_before_30_days(clock, tokens):
    issued = RefreshToken.objects.get().created
    clock.move_to(issued + timedelta(days=29, hours=23))
    response = refresh(tokens["client_id"], tokens["refresh_token"])
    assert response.status_code == 200, response.content
    assert response.json()["refresh_token"] != tokens["refresh_token"]


@pytest.mark.parametrize("age", [REFRESH_LIFETIME, REFRESH_LIFETIME + timedelta(seconds=1)], ids=["30d", "30d+1s"])
def test_a_refresh_token_expires_30_days_after_its_own_issue(clock, tokens, age):
    token = RefreshToken.objects.select_related("access_token").get()
    clock.move_to(token.created + age)
    # The access token's hour does not stretch it (DOT alone counts 30 days from the access token's expiry).
    assert token.access_token.expires + REFRESH_LIFETIME > timezone.now()
    _oauth_error(refresh(tokens["client_id"], tokens["refresh_token"]), 400, "invalid_grant")
    # The refusal changes nothing: no new tokens, the connection stays (its access token simply expired).
    assert AccessToken.objects.count() == 1 and RefreshToken.objects.count() == 1
    assert RefreshToken.objects.get().revoked is None
    assert Connection.objects.unscoped().get().revoked_at is None


def test_the_rotated_replacement_gets_a_fresh_30_days(clock, tokens):
    issued = RefreshToken.objects.get().created
    clock.move_to(issued + timedelta(days=29, hours=23))
    second = refresh(tokens["client_id"], tokens["refresh_token"]).json()["refresh_token"]
    replacement = RefreshToken.objects.get(revoked__isnull=True)
    assert replacement.created == timezone.now()
    # Past the first token's 30 days, well within the replacement's.
    clock.move_to(replacement.created + timedelta(days=29, hours=23))
    response = refresh(tokens["client_id"], second)
    assert response.status_code == 200, response.content
    third = response.json()["refresh_token"]
    # And the newest one again ends 30 days after its own issue.
    newest = RefreshToken.objects.get(revoked__isnull=True)
    clock.move_to(newest.created + REFRESH_LIFETIME + timedelta(seconds=1))
    _oauth_error(refresh(tokens["client_id"], third), 400, "invalid_grant")


def test_refresh_of_a_disconnected_connection_or_removed_member_is_invalid_grant(owner, tokens):
    owner.membership.delete()
    _oauth_error(refresh(tokens["client_id"], tokens["refresh_token"]), 400, "invalid_grant")


def test_refresh_after_disconnect_is_invalid_grant(tokens):
    from apps.oauth.connections import disconnect

    disconnect(Connection.objects.unscoped().get())
    _oauth_error(refresh(tokens["client_id"], tokens["refresh_token"]), 400, "invalid_grant")


def test_revoking_the_refresh_token_disconnects(tokens, connection_endpoint):
    endpoint, delivery = connection_endpoint(Connection.objects.unscoped().get())
    response = Client().post(
        REVOKE, {"token": tokens["refresh_token"], "token_type_hint": "refresh_token", "client_id": tokens["client_id"]}
    )
    assert response.status_code == 200
    assert Connection.objects.unscoped().get().revoked_at is not None
    assert not AccessToken.objects.filter(connection__isnull=False).exists()
    # Spec Authentication rule 10: the endpoints the connection created are archived, their queued deliveries fail.
    assert_archived_with_failed_deliveries(endpoint, delivery)
    assert_error(bearer(tokens["access_token"]).get("/patients"), 401, "UNAUTHENTICATED")


def test_another_client_cannot_revoke(tokens):
    from tests.oauth.conftest import register_client

    other = register_client()
    assert Client().post(REVOKE, {"token": tokens["access_token"], "client_id": other}).status_code == 200
    assert Connection.objects.unscoped().get().revoked_at is None


def test_introspect(owner, tokens):
    client_id = tokens["client_id"]
    active = Client().post(INTROSPECT, {"token": tokens["access_token"], "client_id": client_id}).json()
    assert active["active"] is True and active["organization_id"] == str(owner.organization.id)
    assert active["client_id"] == client_id and active["scope"] == "read write offline_access"
    assert {"exp", "iat", "sub", "token_type", "iss"} <= set(active)
    from tests.oauth.conftest import register_client

    other = Client().post(INTROSPECT, {"token": tokens["access_token"], "client_id": register_client()}).json()
    assert other == {"active": False}
    _oauth_error(Client().post(INTROSPECT, {"token": tokens["access_token"]}), 401, "invalid_client")
    assert Client().post(INTROSPECT, {"token": "svc_oat_eu_nope", "client_id": client_id}).json() == {"active": False}


def test_introspect_reports_access_tokens_only(tokens):
    client_id = tokens["client_id"]

    def introspect(value, **extra):
        response = Client().post(INTROSPECT, {"token": value, "client_id": client_id} | extra)
        assert response.status_code == 200, response.content
        return response.json()

    assert introspect(tokens["access_token"])["active"] is True
    # A live, usable refresh token of this very client is not reported, with or without a hint.
    assert introspect(tokens["refresh_token"]) == {"active": False}
    assert introspect(tokens["refresh_token"], token_type_hint="refresh_token") == {"active": False}
    assert RefreshToken.objects.get().revoked is None  # introspecting it changed nothing
    rotated = refresh(client_id, tokens["refresh_token"])
    assert rotated.status_code == 200, rotated.content  # it was live all along
    assert introspect(rotated.json()["refresh_token"]) == {"active": False}


@override_settings(SVC_OAUTH_UNAUTHENTICATED_RATE="3/m")
def test_unauthenticated_endpoints_share_a_window_per_address_block(app_client_id):
    same_block = [Client(REMOTE_ADDR=f"203.0.113.{n}") for n in (1, 2, 3)]
    assert same_block[0].post(TOKEN, {"grant_type": "refresh_token"}).status_code == 400
    assert same_block[1].post(REVOKE, {"token": "x", "client_id": app_client_id}).status_code == 200
    assert same_block[2].post(INTROSPECT, {"token": "x", "client_id": app_client_id}).status_code == 200
    refused = same_block[0].post(TOKEN, {"grant_type": "refresh_token"})
    body = _oauth_error(refused, 429, "rate_limited")
    assert refused["Retry-After"] == "60" and body["error_description"]
    # Another /24 has its own window; IPv6 counts per /64.
    assert Client(REMOTE_ADDR="203.0.114.1").post(TOKEN, {"grant_type": "refresh_token"}).status_code == 400
    v6 = [Client(REMOTE_ADDR=f"2001:db8:1:2::{n}") for n in range(1, 5)]
    statuses = [c.post(TOKEN, {"grant_type": "refresh_token"}).status_code for c in v6]
    assert statuses == [400, 400, 400, 429]


def test_a_request_without_a_usable_address_is_refused(app_client_id):
    for address in ("", "unknown"):
        response = Client(REMOTE_ADDR=address).post(TOKEN, {"grant_type": "refresh_token"})
        _oauth_error(response, 400, "invalid_request")


def test_spent_codes_are_swept_once_nothing_they_bought_can_work(signed_in, app_client_id):
    """Codes kept for replay detection go when they can no longer matter: an exchanged one 31 days on with no live
    token of its lineage, an unexchanged one a day after it expired. A code whose lineage is still refreshed stays,
    and its replay still revokes."""
    from apps.oauth.connections import purge_spent_codes
    from apps.oauth.models import Grant

    dead_authorization = new_authorization(app_client_id)
    dead_code = code_for(signed_in, dead_authorization)
    exchange(dead_authorization, dead_code)
    live_authorization = new_authorization(app_client_id)
    live_code = code_for(signed_in, live_authorization)
    live = exchange(live_authorization, live_code).json()
    unused_code = code_for(signed_in, new_authorization(app_client_id))
    assert purge_spent_codes() == 0  # everything is young

    with time_machine.travel(timezone.now() + timedelta(days=29)):
        live = refresh(app_client_id, live["refresh_token"]).json()  # the live lineage keeps refreshing
    with time_machine.travel(timezone.now() + timedelta(days=40)):
        assert purge_spent_codes() == 2
        assert set(Grant.objects.values_list("code", flat=True)) == {live_code}
        _oauth_error(exchange(live_authorization, live_code), 400, "invalid_grant")
        _oauth_error(refresh(app_client_id, live["refresh_token"]), 400, "invalid_grant")  # the replay revoked it
    assert unused_code not in set(Grant.objects.values_list("code", flat=True))
