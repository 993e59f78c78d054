from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "apps.conversations"
    label = "conversations"
    verbose_name = "Conversations"

    def ready(self) -> None:
        from apps.conversations.attachments import erase_files_of_patients
        from apps.conversations.inbound import erase_inbound_of_patients
        from apps.conversations.services import merge_conversations_into_survivor
        from apps.patients.public import on_erase, on_merge

        # Conversations (their messages, attachment rows and read marks) cascade with the patient row; the hook
        # deletes the attachments' stored files once the erasure commits (files are not transactional); what they
        # sent that is still waiting (items to process, parked items) goes in the same transaction.
        on_erase(erase_files_of_patients)
        on_erase(erase_inbound_of_patients)
        on_merge(merge_conversations_into_survivor)

        from apps.conversations.pages import BROWSER_PAGES, error_page
        from apps.core.browser_pages import register_error_page

        for prefix in BROWSER_PAGES:  # a browser's failed return from the short-video platform's OAuth
            register_error_page(prefix, error_page)
