"""The global developer front door ({developer_url}/oauth/authorize, /oauth/token, /oauth/revoke): a small routing
layer over the regional OAuth servers, driven by SVC_REGION_BASE_URLS (region → base URL).

- authorize: 302 to the chosen region's /auth/oauth2/authorize with the same query (region parameter; this
  deployment's region by default);
- token and revoke: 307 (the POST body is kept) to the region named by a `region` form field, else the region
  marker of the presented code, refresh_token or token (svc_ort_eu_…, eu_…), else 400 invalid_request.
"""

from django.conf import settings
from django.http import HttpResponseRedirect
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from apps.oauth.tokens import REGIONS, region_of
from apps.oauth.views import error_page, oauth_error


def _base_url(region: str | None) -> str | None:
    if region not in REGIONS:
        return None
    return settings.SVC_REGION_BASE_URLS.get(region)


class TemporaryRedirectKeepingBody(HttpResponseRedirect):
    status_code = 307


class FrontDoorAuthorizeView(View):
    public = True
    protocol_route = True
    http_method_names = ["get"]

    def get(self, request):
        region = request.GET.get("region") or settings.SVC_REGION
        base = _base_url(region)
        if base is None:
            return error_page(request, title="Unknown region", message="region must be one of the served regions.")
        query = request.META.get("QUERY_STRING", "")
        return HttpResponseRedirect(f"{base}/auth/oauth2/authorize" + (f"?{query}" if query else ""))


@method_decorator(csrf_exempt, name="dispatch")
class FrontDoorPostView(View):
    """POST /oauth/token and /oauth/revoke."""

    public = True
    protocol_route = True
    http_method_names = ["post"]
    target = ""

    def post(self, request):
        region = request.POST.get("region")
        if not region:
            for field in ("code", "refresh_token", "token"):
                region = region_of(request.POST.get(field))
                if region:
                    break
        base = _base_url(region)
        if base is None:
            return oauth_error(
                400, "invalid_request", "Name the region (eu or us) or present a code or token issued by one."
            )
        return TemporaryRedirectKeepingBody(f"{base}{self.target}")
