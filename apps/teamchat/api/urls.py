from django.urls import path

from apps.teamchat.api import views

urlpatterns = [
    path("team-chat/channels", views.ChannelListView.as_view()),
    path("team-chat/channels/<uuid_param:id>", views.ChannelView.as_view()),
    path("team-chat/channels/<uuid_param:id>/archive", views.ChannelArchiveView.as_view()),
    path("team-chat/channels/<uuid_param:id>/unarchive", views.ChannelUnarchiveView.as_view()),
    path("team-chat/channels/<uuid_param:id>/join", views.ChannelJoinView.as_view()),
    path("team-chat/channels/<uuid_param:id>/leave", views.ChannelLeaveView.as_view()),
    path("team-chat/channels/<uuid_param:id>/members", views.ChannelMembersView.as_view()),
    path("team-chat/channels/<uuid_param:id>/members/<uuid_param:user_id>", views.ChannelMemberView.as_view()),
    path("team-chat/channels/<uuid_param:id>/messages", views.ChannelMessagesView.as_view()),
    path("team-chat/channels/<uuid_param:id>/read", views.ChannelReadView.as_view()),
    path("team-chat/threads", views.ThreadListView.as_view()),
    path("team-chat/threads/<uuid_param:id>", views.ThreadView.as_view()),
    path("team-chat/threads/<uuid_param:id>/messages", views.ThreadMessagesView.as_view()),
    path("team-chat/threads/<uuid_param:id>/read", views.ThreadReadView.as_view()),
    path("team-chat/messages/<uuid_param:id>", views.MessageView.as_view()),
    path("team-chat/unread", views.UnreadView.as_view()),
]
