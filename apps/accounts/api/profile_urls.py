from django.urls import path

from apps.accounts.api import profile_views as views

urlpatterns = [
    path("user/me", views.UserMeView.as_view()),
    path("user/change-email", views.EmailChangeView.as_view()),
    path("user/avatar", views.UserAvatarView.as_view()),
    path("user/sessions", views.UserSessionListView.as_view()),
    path("user/sessions/revoke-others", views.UserSessionRevokeOthersView.as_view()),
    path("user/sessions/<uuid_param:id>", views.UserSessionView.as_view()),
    path("organization/logo", views.OrganizationLogoView.as_view()),
]
