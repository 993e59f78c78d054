"""The stock management endpoints of the libraries we build on are never reachable: two-factor and OAuth
applications are managed only through the service's own routes (spec "Two-factor"; issue 5)."""

import pytest
from django.contrib import admin

from apps.accounts.models import TotpDevice

STOCK_PATHS = [
    # django-oauth-toolkit's default URLconf: application and authorized-token management.
    "/o/applications/",
    "/o/applications/register/",
    "/o/authorized_tokens/",
    "/auth/oauth2/applications/",
    "/auth/oauth2/authorized_tokens/",
    "/auth/oauth2/register/some-client-id/",  # RFC 7592 management: not offered
    # django-otp / two-factor packages' usual mount points.
    "/account/two_factor/",
    "/account/two_factor/setup/",
    "/otp/",
]


@pytest.mark.parametrize("path", STOCK_PATHS)
def test_stock_management_routes_are_not_mounted(owner, path):
    client = owner.session_client()
    for method in ("get", "post"):
        response = getattr(client, method)(path)
        assert response.status_code == 404, (method, path, response.status_code)


def test_django_otps_stock_devices_are_not_installed_or_administered():
    from django.apps import apps

    assert not apps.is_installed("django_otp.plugins.otp_totp")
    assert not apps.is_installed("django_otp.plugins.otp_static")
    # Our authenticator model is in the back office read-only, without its key.
    model_admin = admin.site._registry[TotpDevice]
    assert "key_encrypted" not in model_admin.get_fields(None)
