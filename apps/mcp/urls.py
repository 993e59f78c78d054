from django.urls import path

from apps.mcp.views import McpView

urlpatterns = [path("mcp", McpView.as_view())]
