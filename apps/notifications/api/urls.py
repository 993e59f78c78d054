from django.urls import path

from apps.notifications.api import views

urlpatterns = [
    path("notifications", views.NotificationListView.as_view()),
    path("notifications/unread-count", views.UnreadCountView.as_view()),
    path("notifications/read-all", views.ReadAllView.as_view()),
    path("notifications/preferences", views.PreferencesView.as_view()),
    path("notifications/<uuid_param:id>", views.NotificationView.as_view()),
    path("notifications/<uuid_param:id>/read", views.MarkReadView.as_view()),
    path("notifications/<uuid_param:id>/unread", views.MarkUnreadView.as_view()),
]
