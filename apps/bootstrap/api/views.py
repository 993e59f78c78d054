"""GET /bootstrap (tag bootstrap): one call with what a client needs at start, with a strong ETag.

Any member of the practice, with any credential: a browser session, an API key, or an OAuth token holding read,
settings.read or settings.write (scope area settings). The body is built in a handful of queries
(apps.bootstrap.selectors); its ETag is the SHA-256 of the body, so it changes whenever anything in it does (a role
change, a newly configured area, an agreement accepted or published). If-None-Match with the current ETag answers 304
with no body."""

from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.bootstrap import selectors
from apps.bootstrap.api import serializers as s
from apps.core.permissions import AUTHENTICATED
from apps.core.views import BaseApiView


class BootstrapView(BaseApiView):
    # Every member, whatever the role: the permission is the caller's own identity, and the practice is then
    # required (403 NO_ORGANIZATION with none, ORGANIZATION_AMBIGUOUS with several and no choice).
    permission = AUTHENTICATED
    scope_area = "settings"

    @extend_schema(
        tags=["bootstrap"],
        operation_id="bootstrap_read",
        parameters=[
            OpenApiParameter(
                "If-None-Match",
                str,
                OpenApiParameter.HEADER,
                description="The ETag of the copy you hold; when it is still current the answer is 304, no body.",
            )
        ],
        responses={
            200: OpenApiResponse(s.BootstrapOutput, description="With ETag (strong) and Cache-Control: private."),
            304: OpenApiResponse(description="Not modified: the If-None-Match ETag is current."),
        },
        summary="What a client needs at start: practice, you, your role, workspaces, features and limits",
        description="Any member of the practice; a browser session, an API key, or an OAuth token with read, "
        "settings.read or settings.write. practice {id, name, country, region, timezone, currency}, user {id, name, "
        "email}, role, permissions (the role's, sorted), workspaces and defaultWorkspace (as /auth/me), "
        "clinicalWorkspaceAvailable, features (which areas the practice has configured: leadAds, website, widget, "
        "dialer, aiVoice, reputation, emailDomains, clinicalWorkspace), limits (the request bucket of API keys and "
        "OAuth connections, body and upload caps, webhook endpoints, MCP reply size, feed page size) and "
        "pendingAgreements (a count; the list is at /agreements). The ETag is the SHA-256 of the body: it changes "
        "whenever anything in the body does. If-None-Match with it answers 304 with no body.",
    )
    def get(self, request):
        body = s.BootstrapOutput(selectors.bootstrap(membership=self.membership, user=request.user)).data
        etag = selectors.body_etag(body)
        response = get_conditional_response(request._request, etag=etag) or Response(body)
        response["ETag"] = etag
        patch_cache_control(response, private=True, no_cache=True)
        patch_vary_headers(response, ("Authorization", "Cookie", "X-Organization-ID"))
        return response
