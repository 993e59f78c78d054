"""OAuth server routes. DOT's metadata view builds its endpoint URLs with reverse("oauth2_provider:<name>"), so the
protocol routes live in that namespace under DOT's names (research/protocols.md 1.8)."""

from django.urls import include, path

from apps.oauth import frontdoor, views

protocol_patterns = [
    path("auth/oauth2/authorize", views.AuthorizeView.as_view(), name="authorize"),
    path("auth/oauth2/consent", views.ConsentView.as_view(), name="consent"),
    path("auth/oauth2/continue", views.ContinueView.as_view(), name="continue"),
    path("auth/oauth2/token", views.TokenView.as_view(), name="token"),
    path("auth/oauth2/revoke", views.RevokeView.as_view(), name="revoke-token"),
    path("auth/oauth2/introspect", views.IntrospectView.as_view(), name="introspect"),
    path("auth/oauth2/register", views.RegisterView.as_view(), name="dcr-register"),
    path("auth/oauth2/delete-consent", views.NotOfferedView.as_view(), name="delete-consent"),
    path("auth/oauth2/update-consent", views.NotOfferedView.as_view(), name="update-consent"),
    path(
        ".well-known/oauth-authorization-server/auth",
        views.ServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource/mcp",
        views.ProtectedResourceMetadataView.as_view(),
        name="oauth-resource-metadata",
    ),
]

front_door_patterns = [
    path("oauth/authorize", frontdoor.FrontDoorAuthorizeView.as_view(), name="authorize"),
    path("oauth/token", frontdoor.FrontDoorPostView.as_view(target="/auth/oauth2/token"), name="token"),
    path("oauth/revoke", frontdoor.FrontDoorPostView.as_view(target="/auth/oauth2/revoke"), name="revoke"),
]

urlpatterns = [
    path("", include((protocol_patterns, "oauth2_provider"))),
    path("", include((front_door_patterns, "oauth_front_door"))),
]
