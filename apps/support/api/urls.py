from django.urls import path

from apps.support.api import views

urlpatterns = [
    path("support/thread", views.SupportThreadView.as_view()),
    path("support/thread/read", views.SupportReadView.as_view()),
    path("support/messages", views.SupportMessagesView.as_view()),
]
