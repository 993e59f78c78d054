from django.urls import path

from apps.conversations.api import attachments, inbox, ingest_review, short_video, views

BASE = "settings/channel-connections"
ONE = f"{BASE}/<uuid_param:id>"

urlpatterns = [
    path(BASE, views.ConnectionListView.as_view()),
    path(f"{BASE}/short-video/connect", short_video.ShortVideoConnectView.as_view()),
    path(ONE, views.ConnectionItemView.as_view()),
    path(f"{ONE}/rotate-token", views.RotateTokenView.as_view()),
    path("settings/messaging", views.MessagingSettingsView.as_view()),
]


CONVERSATION = "conversations/<uuid_param:id>"
urlpatterns += [
    path("conversations", inbox.ConversationListView.as_view()),
    path("conversations/unread-counts", inbox.UnreadCountsView.as_view()),
    path(CONVERSATION, inbox.ConversationView.as_view()),
    path(f"{CONVERSATION}/messages", inbox.MessageListView.as_view()),
    path(f"{CONVERSATION}/assign", inbox.AssignView.as_view()),
    path(f"{CONVERSATION}/close", inbox.CloseView.as_view()),
    path(f"{CONVERSATION}/reopen", inbox.ReopenView.as_view()),
    path(f"{CONVERSATION}/snooze", inbox.SnoozeView.as_view()),
    path(f"{CONVERSATION}/read", inbox.MarkReadView.as_view()),
    path(f"{CONVERSATION}/unread", inbox.MarkUnreadView.as_view()),
]

urlpatterns += [
    path(
        f"{CONVERSATION}/messages/<uuid_param:message_id>/attachments/<uuid_param:attachment_id>",
        attachments.AttachmentDownloadView.as_view(),
    ),
]

PARKED = "ingest-review/<uuid_param:id>"
urlpatterns += [
    path("ingest-review", ingest_review.ParkedListView.as_view()),
    path(PARKED, ingest_review.ParkedItemView.as_view()),
    path(f"{PARKED}/replay", ingest_review.ReplayView.as_view()),
    path(f"{PARKED}/dismiss", ingest_review.DismissView.as_view()),
]
