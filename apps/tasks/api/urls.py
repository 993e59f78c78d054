from django.urls import path

from apps.tasks.api import views

urlpatterns = [
    path("tasks", views.TaskListView.as_view()),
    path("tasks/<uuid_param:id>", views.TaskView.as_view()),
    path("tasks/<uuid_param:id>/complete", views.TaskCompleteView.as_view()),
    path("tasks/<uuid_param:id>/reopen", views.TaskReopenView.as_view()),
    path("tasks/<uuid_param:id>/cancel", views.TaskCancelView.as_view()),
]
