from django.apps import AppConfig


class TeamChatConfig(AppConfig):
    name = "apps.teamchat"
    label = "teamchat"
    verbose_name = "Team chat"

    def ready(self):
        from apps.accounts.hooks import on_member_removed
        from apps.teamchat.services import member_left

        on_member_removed(member_left)
