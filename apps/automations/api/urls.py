from django.urls import path

from apps.automations.api import views

urlpatterns = [
    path("automations", views.RuleListView.as_view()),
    path("automations/catalogue", views.CatalogueView.as_view()),
    path("automations/runs", views.RunListView.as_view()),
    path("automations/dry-run", views.DryRunView.as_view()),
    path("automations/<uuid_param:id>", views.RuleView.as_view()),
    path("automations/<uuid_param:id>/enable", views.RuleEnableView.as_view()),
    path("automations/<uuid_param:id>/disable", views.RuleDisableView.as_view()),
    path("automations/<uuid_param:id>/runs", views.RuleRunListView.as_view()),
    path("automations/<uuid_param:id>/dry-run", views.RuleDryRunView.as_view()),
]
