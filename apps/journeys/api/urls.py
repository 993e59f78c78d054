from django.urls import path

from apps.journeys.api import views

urlpatterns = [
    path("treatments", views.TreatmentListView.as_view()),
    path("treatments/<uuid_param:id>", views.TreatmentView.as_view()),
    path("pipelines", views.PipelineListView.as_view()),
    path("pipelines/<uuid_param:id>", views.PipelineView.as_view()),
    path("pipelines/<uuid_param:id>/stages", views.StageListView.as_view()),
    path("pipelines/<uuid_param:id>/stages/reorder", views.StageReorderView.as_view()),
    path("pipelines/<uuid_param:id>/stages/<uuid_param:stage_id>", views.StageView.as_view()),
    path("journeys", views.JourneyListView.as_view()),
    path("journeys/board", views.JourneyBoardView.as_view()),
    path("journeys/<uuid_param:id>", views.JourneyView.as_view()),
    path("journeys/<uuid_param:id>/move", views.JourneyMoveView.as_view()),
    path("journeys/<uuid_param:id>/win", views.JourneyWinView.as_view()),
    path("journeys/<uuid_param:id>/lose", views.JourneyLoseView.as_view()),
    path("journeys/<uuid_param:id>/reopen", views.JourneyReopenView.as_view()),
]
