from django.apps import AppConfig


class SitesConfig(AppConfig):
    name = "apps.sites"
    label = "sites"
    verbose_name = "Websites"

    def ready(self):
        from apps.capture.public import register_browser_answers
        from apps.core.browser_pages import register_error_page
        from apps.sites.pages import BROWSER_PAGES, browser_thanks, error_page, hosted_form_refusal

        for prefix in BROWSER_PAGES:  # the hosted form and its post: a failure is a page the patient can read
            register_error_page(prefix, error_page)
        register_browser_answers(refusal=hosted_form_refusal, thanks=browser_thanks)
