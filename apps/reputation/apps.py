from django.apps import AppConfig


class ReputationConfig(AppConfig):
    name = "apps.reputation"
    label = "reputation"
    verbose_name = "Reputation"

    def ready(self) -> None:
        from apps.core.browser_pages import register_error_page
        from apps.patients.public import on_erase, on_merge
        from apps.reputation.hooks import erase_reputation_of_patients, repoint_reputation_to_survivor
        from apps.reputation.pages import BROWSER_PAGES, error_page

        on_erase(erase_reputation_of_patients)
        on_merge(repoint_reputation_to_survivor)
        for prefix in BROWSER_PAGES:
            register_error_page(prefix, error_page)
