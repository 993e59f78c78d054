"""MCP test fixtures."""

import copy

import pytest
from django.conf import settings
from django.test import override_settings


@pytest.fixture
def deployment(live_server):
    """The service's public URLs are the live server's for this test."""
    base = live_server.url
    oauth = copy.deepcopy(settings.OAUTH2_PROVIDER) | {
        "OIDC_ISS_ENDPOINT": f"{base}/auth",
        "OAUTH2_PROTECTED_RESOURCE_IDENTIFIER": f"{base}/mcp",
        "OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS": [f"{base}/auth"],
    }
    with override_settings(
        SVC_BASE_URL=base,
        SVC_APP_URL=base,
        SVC_MCP_URL=f"{base}/mcp",
        SVC_OAUTH_ISSUER=f"{base}/auth",
        SVC_REGION_BASE_URLS={settings.SVC_REGION: base},
        OAUTH2_PROVIDER=oauth,
    ):
        yield base
