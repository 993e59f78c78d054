from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "apps.conversations"
    label = "conversations"
    verbose_name = "Conversations"

    def ready(self) -> None:
        from apps.conversations.services import merge_conversations_into_survivor
        from apps.patients.public import on_merge

        # Erasure needs no hook: conversations (and their messages and read marks) cascade with the patient row.
        on_merge(merge_conversations_into_survivor)
