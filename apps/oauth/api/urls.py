from django.urls import path

from apps.oauth.api import views

urlpatterns = [
    path("connected-apps", views.ConnectedAppListView.as_view()),
    path("connected-apps/<uuid_param:id>", views.ConnectedAppView.as_view()),
]
