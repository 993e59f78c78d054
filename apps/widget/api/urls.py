from django.urls import path

from apps.widget.api import pages, views

urlpatterns = [
    path("widget-connections", views.WidgetListView.as_view()),
    path("widget-connections/<uuid_param:id>", views.WidgetItemView.as_view()),
    path("conversations/<uuid_param:id>/typing", views.TypingView.as_view()),
    path("widget/<str:embed_key>/config", views.ConfigView.as_view()),
    path("widget/<str:embed_key>/visitors", views.VisitorStartView.as_view()),
    path("widget/<str:embed_key>/thread", views.ThreadView.as_view()),
    path("widget/<str:embed_key>/thread/messages", views.MessagesView.as_view()),
    path("widget/<str:embed_key>/demo", pages.DemoPageView.as_view()),
]
