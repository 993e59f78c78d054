from django.urls import path

from apps.plans.api import views

urlpatterns = [
    path("clinical/procedures", views.ProcedureListView.as_view()),
    path("clinical/procedures/<uuid_param:id>", views.ProcedureDetailView.as_view()),
    path("clinical/price-lists/<uuid_param:id>/fees", views.FeeView.as_view()),
    path("clinical/patients/<uuid_param:id>/treatment-plans", views.PatientPlanListView.as_view()),
    path("clinical/treatment-plans/<uuid_param:plan_id>", views.PlanDetailView.as_view()),
    path("clinical/treatment-plans/<uuid_param:plan_id>/status", views.PlanStatusView.as_view()),
    path("clinical/treatment-plans/<uuid_param:plan_id>/items", views.ItemListView.as_view()),
    path("clinical/treatment-plans/<uuid_param:plan_id>/items/<uuid_param:item_id>", views.ItemDetailView.as_view()),
    path(
        "clinical/treatment-plans/<uuid_param:plan_id>/items/<uuid_param:item_id>/status",
        views.ItemStatusView.as_view(),
    ),
    path("clinical/treatment-plans/<uuid_param:plan_id>/apply-template", views.TemplateApplyView.as_view()),
    path("clinical/treatment-templates", views.TemplateListView.as_view()),
    path("clinical/treatment-templates/<uuid_param:id>", views.TemplateDetailView.as_view()),
]
