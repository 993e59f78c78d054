"""Website routes: the public site-key surface (/site/{siteKey}/config, /site/{siteKey}/forms), the hosted form page
(/form-page/{token}), and the settings routes for websites and their form-discovery review list."""

from urllib.parse import urlsplit

from django.conf import settings
from django.utils.cache import patch_vary_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from apps.capture.public import form_for_token, form_token
from apps.core.errors import NotFound
from apps.core.limits import MinuteWindowLimit, TokenBucketLimit
from apps.core.pagination import offset_page
from apps.core.parsers import CamelCaseStrictJSONParser
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView
from apps.sites import pages, selectors, services
from apps.sites.api import serializers as s
from apps.sites.domains import host_allowed, origin_host
from apps.sites.errors import SiteDomainNotAllowed, SiteNotFound
from apps.sites.fields import config_fields
from apps.sites.models import FormDiscovery, Website

SITE_TAGS = ["site"]
SETTINGS_TAGS = ["capture"]
DISCOVERY_BODY_BYTES = 64 * 1024

# Public abuse screen: 300 a minute per client address. Fails open: a Redis outage must not break practice websites.
PUBLIC_SCREEN = MinuteWindowLimit("site.public", rate=lambda: settings.SVC_PUBLIC_SCREEN_RATE, fail_open=True)
DISCOVERY_BUCKET = TokenBucketLimit(
    "site.discovery", setting="SVC_SITE_DISCOVERY_BUCKET", key=lambda request, view: str(view.site.id)
)


def _site_url(site_key: str, action: str) -> str:
    return f"{settings.SVC_BASE_URL}/site/{site_key}/{action}"


# --- public: /site/{siteKey}/… ----------------------------------------------------------------------------------------


class PlainTextJSONParser(CamelCaseStrictJSONParser):
    """A report sent as text/plain (navigator.sendBeacon, or fetch without a CORS preflight) holds the same JSON."""

    media_type = "text/plain"


class PublicSiteView(BaseApiView):
    """The site key in the path is the boundary. A browser on one of the site's allowed domains may read the
    answers (Access-Control-Allow-Origin echoes its origin); no credentials are involved."""

    public = True
    rate_limits = (PUBLIC_SCREEN,)
    site: Website | None = None
    cors_methods = "GET"

    def load_site(self, site_key: str) -> Website:
        self.site = selectors.website_for_key(site_key)
        if self.site is None:
            raise SiteNotFound()
        return self.site

    def allowed_origin(self, request) -> str | None:
        origin = request.headers.get("Origin")
        if origin and self.site is not None and host_allowed(origin_host(origin), self.site.allowed_domains):
            return origin
        return None

    @extend_schema(exclude=True)
    def options(self, request, site_key):
        """CORS preflight."""
        self.load_site(site_key)
        response = Response(status=204)
        if self.allowed_origin(request):
            response["Access-Control-Allow-Methods"] = self.cors_methods
            response["Access-Control-Allow-Headers"] = "Content-Type"
            response["Access-Control-Max-Age"] = "600"
        return response

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        origin = self.allowed_origin(request)
        if origin:
            response["Access-Control-Allow-Origin"] = origin
        patch_vary_headers(response, ["Origin"])
        return response


class SiteConfigView(PublicSiteView):
    cors_methods = "GET"

    @extend_schema(
        tags=SITE_TAGS,
        operation_id="site_config",
        summary="A website's form configuration: its active public capture forms, where to post, the default fields",
        description="Public: the site key is the credential. Unknown and archived site keys answer the same 404. "
        "Lists the capture forms linked to the site that are active, in public mode and for form submissions. "
        "Limit: 300 requests per minute per client address.",
        responses={200: s.SiteConfigSerializer},
        auth=[],
    )
    def get(self, request, site_key):
        site = self.load_site(site_key)
        fields = config_fields()
        forms = []
        for form in selectors.config_forms(site):
            token = form_token(form)
            forms.append(
                {
                    "id": form.id,
                    "name": form.name,
                    "capture_url": f"{settings.SVC_BASE_URL}/capture/{token}",
                    "form_page_url": f"{settings.SVC_BASE_URL}/form-page/{token}",
                    "fields": fields,
                }
            )
        response = Response({"site": {"name": site.name}, "forms": forms})
        response["Cache-Control"] = "no-cache"
        return response


class FormDiscoveryReportView(PublicSiteView):
    max_body_bytes = DISCOVERY_BODY_BYTES
    parser_classes = [CamelCaseStrictJSONParser, PlainTextJSONParser]
    cors_methods = "POST"

    @extend_schema(
        tags=SITE_TAGS,
        operation_id="site_form_discovery_report",
        summary="Report the forms a page of the website has (form discovery), for review in settings",
        description="Public: the site key is the credential. The page URL's host, and the Origin header's host when "
        "one is sent, must be one of the site's allowed domains or a subdomain of one (403 SITE_DOMAIN_NOT_ALLOWED). "
        "A report repeated for the same page and form key refreshes the discovery (lastSeenAt, timesSeen, fields) "
        "instead of adding one. The URL's fragment and marketing parameters (utm_*, click ids) are dropped. At most "
        "20 forms of 100 fields each; bodies over 64 KiB answer 413. Also accepted as text/plain holding the JSON "
        "(navigator.sendBeacon). Limits: 30 burst, 0.5 per second per site; 300 per minute per client address.",
        request=s.DiscoveryReportSerializer,
        responses={202: s.DiscoveryAcceptedSerializer},
        auth=[],
    )
    def post(self, request, site_key):
        site = self.load_site(site_key)
        origin = request.headers.get("Origin")
        if origin is not None and not host_allowed(origin_host(origin), site.allowed_domains):
            raise SiteDomainNotAllowed()
        DISCOVERY_BUCKET.check(request, self)
        data = self.parse_body(s.DiscoveryReportSerializer).validated_data
        if not host_allowed(urlsplit(data["page_url"]).hostname, site.allowed_domains):
            raise SiteDomainNotAllowed()
        accepted = services.discovery_record(website=site, page_url=data["page_url"], forms=data["forms"])
        return Response({"accepted": accepted}, status=202)


# --- public: the hosted form page -------------------------------------------------------------------------------------


class FirstRenderer(BaseContentNegotiation):
    """The form page's own answers are HTML responses made by the view; whatever DRF renders (a 429, a 405) is the
    JSON envelope, whatever the Accept header says."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


NOT_FOUND_PAGE = "No such form page: an HTML page for browsers, the ApiError envelope when Accept prefers JSON."


class FormPageView(BaseApiView):
    public = True
    rate_limits = (PUBLIC_SCREEN,)
    renderer_classes = [CamelCaseJSONRenderer]
    content_negotiation_class = FirstRenderer
    http_method_names = ["get", "head"]

    @extend_schema(
        tags=SITE_TAGS,
        operation_id="form_page",
        summary="The hosted form page of a capture form: a plain HTML form that posts to its capture URL",
        description="Public, server-rendered, works without JavaScript, may be embedded in an iframe. Only for "
        "active capture forms in public mode for form submissions; any other token answers 404 (an HTML page, or "
        "the JSON envelope when Accept prefers application/json). utm_* and click-id query parameters of this "
        "page's URL are passed on as hidden fields. Limit: 300 requests per minute per client address.",
        responses={
            (200, "text/html"): OpenApiTypes.STR,
            (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NOT_FOUND_PAGE),
            (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NOT_FOUND_PAGE),
        },
        auth=[],
    )
    def get(self, request, token):
        form = form_for_token(token)
        if not pages.form_page_usable(form):
            if request._request.get_preferred_type(["text/html", "application/json"]) == "application/json":
                raise NotFound("No such form page.")
            return pages.not_found_page(request)
        return pages.form_page(request, form)


# --- settings: websites ---------------------------------------------------------------------------------------------


def render_sites(websites: list[Website], *, organization) -> list[dict]:
    summaries = selectors.site_summaries(organization=organization, websites=websites)
    return [
        {
            "id": site.id,
            "name": site.name,
            "site_key": site.site_key,
            "status": site.status,
            "allowed_domains": site.allowed_domains,
            "form_ids": summaries[site.id][0],
            "config_url": _site_url(site.site_key, "config"),
            "discovery_url": _site_url(site.site_key, "forms"),
            "new_discoveries": summaries[site.id][1],
            "archived_at": site.archived_at,
            "created_at": site.created_at,
            "updated_at": site.updated_at,
        }
        for site in websites
    ]


def render_discovery(item: FormDiscovery) -> dict:
    return {
        "id": item.id,
        "website_id": item.website_id,
        "page_url": item.page_url,
        "form_key": item.form_key,
        "fields": item.fields,
        "status": item.status,
        "linked_form_id": item.linked_form_id,
        "first_seen_at": item.first_seen_at,
        "last_seen_at": item.last_seen_at,
        "times_seen": item.times_seen,
    }


class SitesView(BaseApiView):
    scope_area = "settings"
    error_statuses = ("409",)

    def site(self, id) -> Website:
        return self.get_tenant_object(Website, id)

    def one(self, site: Website, *, status: int = 200) -> Response:
        return Response(render_sites([site], organization=self.organization)[0], status=status)


class SiteListView(SitesView):
    permission = {"GET": "settings:read", "POST": "settings:update"}

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="sites_list",
        parameters=[s.SiteListQuerySerializer],
        responses={200: s.SitePageSerializer},
        summary="The practice's websites (site keys for lead capture), newest first",
        description="Permission settings:read. Each website's public site key, allowed domains and the public "
        "capture forms it uses.",
    )
    def get(self, request):
        query = self.parse_query(s.SiteListQuerySerializer).validated_data
        websites, total = selectors.websites_page(organization=self.organization, **query)
        items = render_sites(websites, organization=self.organization)
        return offset_page(items, total, limit=query["limit"], offset=query["offset"])

    @extend_schema(
        tags=SETTINGS_TAGS,
        request=s.SiteWriteSerializer,
        responses={201: s.SiteSerializer},
        summary="Add a website: a new public site key, its allowed domains and capture forms",
        description="Permission settings:update. Creates a website with a new public site key; page and Origin hosts "
        "of the public site routes must be among its allowed domains.",
    )
    def post(self, request):
        data = self.parse_body(s.SiteWriteSerializer).validated_data
        site = services.website_create(organization=self.organization, user=request.user, data=dict(data))
        return self.one(site, status=201)


class SiteView(SitesView):
    permission = {"GET": "settings:read", "PATCH": "settings:update"}

    @extend_schema(
        tags=SETTINGS_TAGS,
        responses={200: s.SiteSerializer},
        summary="Read a website",
        description="Permission settings:read. One website with its site key, allowed domains and capture forms.",
    )
    def get(self, request, id):
        return self.one(self.site(id))

    @extend_schema(
        tags=SETTINGS_TAGS,
        request=s.SiteWriteSerializer(partial=True),
        responses={200: s.SiteSerializer},
        summary="Change a website's name, allowed domains or capture forms (archived websites: 409)",
        description="Permission settings:update. Changes name, allowed domains or capture forms. An archived website "
        "answers 409.",
    )
    def patch(self, request, id):
        site = self.site(id)
        data = self.parse_body(s.SiteWriteSerializer, partial=True).validated_data
        return self.one(services.website_update(organization=self.organization, website=site, data=dict(data)))


class SiteArchiveView(SitesView):
    permission = "settings:update"

    @extend_schema(
        tags=SETTINGS_TAGS,
        request=None,
        responses={200: s.SiteSerializer},
        summary="Archive a website (final; its site key answers 404 at once)",
        description="Permission settings:update. Final: its site key answers 404 at once.",
    )
    def post(self, request, id):
        return self.one(services.website_archive(organization=self.organization, website=self.site(id)))


class SiteRegenerateKeyView(SitesView):
    permission = "settings:update"

    @extend_schema(
        tags=SETTINGS_TAGS,
        request=None,
        responses={200: s.SiteSerializer},
        summary="New site key: the old one stops answering at once",
        description="Permission settings:update. A new public site key; the old one answers 404 at once.",
    )
    def post(self, request, id):
        return self.one(services.website_regenerate_key(organization=self.organization, website=self.site(id)))


class DiscoveryListView(SitesView):
    permission = "settings:read"

    @extend_schema(
        tags=SETTINGS_TAGS,
        operation_id="site_form_discoveries_list",
        parameters=[s.DiscoveryListQuerySerializer],
        responses={200: s.DiscoveryPageSerializer},
        summary="Forms the website's pages reported (form discovery), most recently seen first",
        description="Permission settings:read. Forms the website's pages reported through POST "
        "/site/{site_key}/forms, for review: link one to a capture form, or dismiss it.",
    )
    def get(self, request, id):
        site = self.site(id)
        query = self.parse_query(s.DiscoveryListQuerySerializer).validated_data
        items, total = selectors.discoveries_page(organization=self.organization, website=site, **query)
        items = [render_discovery(item) for item in items]
        return offset_page(items, total, limit=query["limit"], offset=query["offset"])


class DiscoveryActionView(SitesView):
    permission = "settings:update"

    def discovery(self, site: Website, discovery_id) -> FormDiscovery:
        queryset = FormDiscovery.objects.for_org(self.organization).filter(website=site)
        return self.get_tenant_object(FormDiscovery, discovery_id, queryset=queryset)


class DiscoveryLinkView(DiscoveryActionView):
    @extend_schema(
        tags=SETTINGS_TAGS,
        request=s.DiscoveryLinkSerializer,
        responses={200: s.DiscoverySerializer},
        summary="Link a discovered form to a capture form: marked linked, and the capture form joins the website",
        description="Permission settings:update. Marks the discovered form linked to a capture form of the practice, "
        "which joins the website's capture forms.",
    )
    def post(self, request, id, discovery_id):
        site = self.site(id)
        discovery = self.discovery(site, discovery_id)
        form = self.parse_body(s.DiscoveryLinkSerializer).validated_data["capture_form_id"]
        discovery = services.discovery_link(
            organization=self.organization, website=site, discovery=discovery, form=form
        )
        return Response(render_discovery(discovery))


class DiscoveryDismissView(DiscoveryActionView):
    @extend_schema(
        tags=SETTINGS_TAGS,
        request=None,
        responses={200: s.DiscoverySerializer},
        summary="Dismiss a discovered form (not a lead form); the website's capture forms are unchanged",
        description="Permission settings:update. Marks the discovered form dismissed (not a lead form).",
    )
    def post(self, request, id, discovery_id):
        site = self.site(id)
        discovery = self.discovery(site, discovery_id)
        return Response(
            render_discovery(
                services.discovery_dismiss(organization=self.organization, website=site, discovery=discovery)
            )
        )
