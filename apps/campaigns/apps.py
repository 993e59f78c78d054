from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "apps.campaigns"
    label = "campaigns"
    verbose_name = "Campaigns and message templates"

    def ready(self):
        from apps.campaigns.hooks import erase_recipients_of_patients, skip_recipients_of_duplicate
        from apps.campaigns.pages import BROWSER_PAGES, error_page
        from apps.campaigns.services import template_status_from_provider
        from apps.conversations.public import on_template_status
        from apps.core.browser_pages import register_error_page
        from apps.patients.public import on_erase, on_merge

        on_erase(erase_recipients_of_patients)
        on_merge(skip_recipients_of_duplicate)
        on_template_status(template_status_from_provider)  # the platform's review of messaging-app templates
        for prefix in BROWSER_PAGES:  # the opt-out page and its post: a failure is a page the patient can read
            register_error_page(prefix, error_page)
