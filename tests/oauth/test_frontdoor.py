"""The global developer front door routes to the right region (two regions configured)."""

import pytest
from django.test import Client, override_settings

from tests.oauth.conftest import code_for, new_authorization

REGIONS = {"eu": "https://eu.practice.example", "us": "https://us.practice.example"}
pytestmark = pytest.mark.usefixtures("db")


@override_settings(SVC_REGION="eu", SVC_REGION_BASE_URLS=REGIONS)
def test_authorize_goes_to_the_chosen_region_with_the_same_query():
    query = "response_type=code&client_id=abc&region=us&state=s%20t"
    response = Client().get(f"/oauth/authorize?{query}")
    assert response.status_code == 302
    assert response["Location"] == f"https://us.practice.example/auth/oauth2/authorize?{query}"
    default = Client().get("/oauth/authorize?client_id=abc")
    assert default["Location"] == "https://eu.practice.example/auth/oauth2/authorize?client_id=abc"
    bad = Client().get("/oauth/authorize?region=mars")
    assert bad.status_code == 400 and "Location" not in bad


@override_settings(SVC_REGION="eu", SVC_REGION_BASE_URLS=REGIONS)
@pytest.mark.parametrize(
    ("path", "form", "target"),
    [
        ("/oauth/token", {"grant_type": "refresh_token", "refresh_token": "svc_ort_us_abc"}, "us"),
        ("/oauth/token", {"grant_type": "authorization_code", "code": "eu_abc"}, "eu"),
        ("/oauth/token", {"grant_type": "authorization_code", "code": "eu_abc", "region": "us"}, "us"),
        ("/oauth/revoke", {"token": "svc_oat_us_abc"}, "us"),
        ("/oauth/revoke", {"token": "svc_ort_eu_abc"}, "eu"),
    ],
)
def test_token_and_revoke_keep_the_body_and_follow_the_region(path, form, target):
    response = Client().post(path, form)
    assert response.status_code == 307
    endpoint = "token" if path.endswith("token") else "revoke"
    assert response["Location"] == f"{REGIONS[target]}/auth/oauth2/{endpoint}"


@override_settings(SVC_REGION="eu", SVC_REGION_BASE_URLS=REGIONS)
def test_without_a_region_the_front_door_refuses():
    for form in ({"grant_type": "refresh_token", "refresh_token": "opaque"}, {"region": "mars", "code": "eu_x"}):
        response = Client().post("/oauth/token", form)
        assert response.status_code == 400 and response.json()["error"] == "invalid_request"


def test_real_codes_and_tokens_carry_this_regions_marker(owner, signed_in, app_client_id):
    from tests.oauth.conftest import exchange

    authorization = new_authorization(app_client_id)
    code = code_for(signed_in, authorization)
    assert code.startswith("eu_")
    with override_settings(SVC_REGION_BASE_URLS=REGIONS):
        assert Client().post("/oauth/token", {"code": code})["Location"] == f"{REGIONS['eu']}/auth/oauth2/token"
    body = exchange(authorization, code).json()
    assert body["access_token"].startswith("svc_oat_eu_") and body["refresh_token"].startswith("svc_ort_eu_")
