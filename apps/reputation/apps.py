from django.apps import AppConfig


class ReputationConfig(AppConfig):
    name = "apps.reputation"
    label = "reputation"
    verbose_name = "Reputation"

    def ready(self) -> None:
        from apps.core.browser_pages import register_error_page
        from apps.events.services import on_events_committed
        from apps.patients.public import on_erase, on_merge
        from apps.reputation.automatic import queue_committed_events
        from apps.reputation.hooks import erase_reputation_of_patients, repoint_reputation_to_survivor
        from apps.reputation.pages import BROWSER_PAGES, error_page

        on_events_committed(queue_committed_events, with_event_ids=True)
        on_erase(erase_reputation_of_patients)
        on_merge(repoint_reputation_to_survivor)
        for prefix in BROWSER_PAGES:
            register_error_page(prefix, error_page)
