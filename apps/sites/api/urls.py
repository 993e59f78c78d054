from django.urls import path

from apps.sites.api import views

BASE = "settings/sites"
ONE = f"{BASE}/<uuid_param:id>"

urlpatterns = [
    path("site/<str:site_key>/config", views.SiteConfigView.as_view()),
    path("site/<str:site_key>/forms", views.FormDiscoveryReportView.as_view()),
    path("form-page/<str:token>", views.FormPageView.as_view()),
    path(BASE, views.SiteListView.as_view()),
    path(ONE, views.SiteView.as_view()),
    path(f"{ONE}/archive", views.SiteArchiveView.as_view()),
    path(f"{ONE}/regenerate-key", views.SiteRegenerateKeyView.as_view()),
    path(f"{ONE}/form-discoveries", views.DiscoveryListView.as_view()),
    path(f"{ONE}/form-discoveries/<uuid_param:discovery_id>/link", views.DiscoveryLinkView.as_view()),
    path(f"{ONE}/form-discoveries/<uuid_param:discovery_id>/dismiss", views.DiscoveryDismissView.as_view()),
]
