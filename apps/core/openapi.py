"""The OpenAPI document and its Swagger UI: public, self-hosted assets (no CDN at run time)."""

from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny


class OpenApiSchemaView(SpectacularJSONAPIView):
    public = True
    authentication_classes = []
    permission_classes = [AllowAny]


class SwaggerUiView(SpectacularSwaggerView):
    public = True
    authentication_classes = []
    permission_classes = [AllowAny]
