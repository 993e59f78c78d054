from django.urls import path

from apps.accounts.api import views

urlpatterns = [
    path("auth/sign-up/email", views.SignUpView.as_view()),
    path("auth/sign-in/email", views.SignInView.as_view()),
    path("auth/sign-out", views.SignOutView.as_view()),
    path("auth/api-key/create", views.ApiKeyCreateView.as_view()),
    path("auth/api-key/delete", views.ApiKeyDeleteView.as_view()),
    path("auth/me", views.MeView.as_view()),
    path("user/api-keys", views.ApiKeyListView.as_view()),
    path("user/me", views.UserMeView.as_view()),
    path("organization/mine", views.OrganizationMineView.as_view()),
    path("organization/active", views.OrganizationActiveView.as_view()),
    path("organization/members", views.OrganizationMembersView.as_view()),
]
