from django.apps import AppConfig


class TeamChatConfig(AppConfig):
    name = "apps.teamchat"
    label = "teamchat"
    verbose_name = "Team chat"
