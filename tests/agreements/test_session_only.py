"""/agreements is a browser-session surface: API keys and OAuth tokens get 403 BROWSER_SESSION_REQUIRED on every
route (and whatever their role and scopes), and nothing is accepted."""

import pytest

from apps.agreements.models import AgreementAcceptance
from tests.agreements.conftest import seeded
from tests.helpers import assert_error
from tests.oauth.tokens import bearer, mint

pytestmark = pytest.mark.usefixtures("clock")


def routes():
    terms = seeded("terms")
    return [
        ("GET", "/agreements"),
        ("GET", "/agreements/acceptances"),
        ("GET", f"/agreements/{terms.id}"),
        ("POST", f"/agreements/{terms.id}/accept"),
    ]


@pytest.mark.parametrize("kind", ["api_key", "oauth"])
def test_machine_credentials_are_refused_everywhere(owner, kind):
    client = owner.api_client() if kind == "api_key" else bearer(mint(owner, "read write settings.write")[0])

    for method, path in routes():
        assert_error(client.generic(method, path), 403, "BROWSER_SESSION_REQUIRED")

    assert not AgreementAcceptance.objects.for_org(owner.organization).exists()


def test_the_views_refuse_machine_credentials_themselves(owner):
    """Behind the middleware, the views say so too (an in-process call, as the MCP server makes, skips it)."""
    from rest_framework.test import APIRequestFactory, force_authenticate

    from apps.agreements.api.views import AgreementAcceptView
    from apps.core.credentials import OAUTH, Credential

    request = APIRequestFactory().post(f"/agreements/{seeded('terms').id}/accept")
    force_authenticate(request, user=owner.user, token=Credential(kind=OAUTH, scopes=frozenset({"write"})))
    response = AgreementAcceptView.as_view()(request, id=seeded("terms").id)

    assert (response.status_code, response.data["code"]) == (403, "BROWSER_SESSION_REQUIRED")
    assert not AgreementAcceptance.objects.for_org(owner.organization).exists()


def test_no_credential_is_401(db):
    from django.test import Client

    for method, path in routes():
        assert_error(Client().generic(method, path), 401, "UNAUTHENTICATED")
