from django.urls import path

from apps.today.api import views

urlpatterns = [
    path("today", views.TodayView.as_view()),
]
