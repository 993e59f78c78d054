"""GET /widget/{embedKey}/demo (tag widget): the hosted demo page of a chat widget (apps.widget.pages)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation

from apps.core.browser_pages import wants_html
from apps.core.schema import ApiErrorSerializer
from apps.widget import pages
from apps.widget.api.views import CONFIG_BUCKET, PUBLIC_TAGS, PublicWidgetView
from apps.widget.errors import WidgetNotFound

NOT_FOUND = "No active widget with that key: an HTML page for browsers, the ApiError envelope otherwise."


class PageNegotiation(BaseContentNegotiation):
    """The page is an HTML response made by the view; whatever DRF renders (a 429) is the JSON envelope."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class DemoPageView(PublicWidgetView):
    http_method_names = ["get", "head"]
    content_negotiation_class = PageNegotiation

    @extend_schema(
        tags=PUBLIC_TAGS,
        operation_id="widget_demo_page",
        summary="The widget's hosted demo page: a plain practice website with the widget's snippet pasted in",
        description="Public; the embed key names the widget (it is in any page that embeds it). A server-rendered "
        "page loading /static/widget/widget.js from this service (its Content-Security-Policy allows that script "
        "and connections to this service only). The widget answers there only when the page's origin (this "
        "service's) is among the widget's allowedOrigins; the page says whether it is. An unknown, rotated or "
        "inactive key is a 404 page for a browser, the ApiError envelope otherwise. Bucket: the widget's config "
        "one; 300 per minute per client address.",
        responses={
            (200, "text/html"): OpenApiTypes.STR,
            (404, "application/json"): OpenApiResponse(ApiErrorSerializer, description=NOT_FOUND),
            (404, "text/html"): OpenApiResponse(OpenApiTypes.STR, description=NOT_FOUND),
        },
        auth=[],
    )
    def get(self, request, embed_key):
        try:
            widget = self.screened(request, embed_key, CONFIG_BUCKET)
        except WidgetNotFound:
            if wants_html(request):
                return pages.not_found_page(request)
            raise
        return pages.demo_page(request, widget=widget)
