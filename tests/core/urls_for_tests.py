"""Test-only routes on top of the real URLconf (used with @pytest.mark.urls("tests.core.urls_for_tests"))."""

from django.urls import include, path
from rest_framework.response import Response

from apps.core.views import BaseApiView


class BoomView(BaseApiView):
    """A DRF view that fails unexpectedly."""

    public = True

    def get(self, request):
        raise RuntimeError("secret internals: password=hunter2")


def plain_boom(request):
    """A plain Django view (no DRF) that fails unexpectedly."""
    raise RuntimeError("secret internals: password=hunter2")


class CappedView(BaseApiView):
    """A public JSON write with a per-route body cap of 100 bytes."""

    public = True
    max_body_bytes = 100

    def post(self, request):
        return Response({"keys": sorted(request.data), "pad_length": len(request.data.get("pad", ""))})


class ThingView(BaseApiView):
    permission = "member:read"
    scope_area = "settings"

    def get(self, request, thing_id):
        return Response({"id": str(thing_id)})


urlpatterns = [
    path("test/boom", BoomView.as_view()),
    path("test/plain-boom", plain_boom),
    path("test/capped", CappedView.as_view()),
    path("things/<uuid_param:thing_id>", ThingView.as_view()),
    path("", include("config.urls")),
]

handler400 = "apps.core.errors.handler400"
handler403 = "apps.core.errors.handler403"
handler404 = "apps.core.errors.handler404"
handler500 = "apps.core.errors.handler500"
