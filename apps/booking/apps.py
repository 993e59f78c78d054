from django.apps import AppConfig


class BookingConfig(AppConfig):
    name = "apps.booking"
    label = "booking"
    verbose_name = "Online booking"

    def ready(self):
        from apps.booking.pages import BROWSER_PAGES, error_page
        from apps.core.browser_pages import register_error_page

        for prefix in BROWSER_PAGES:  # the hosted booking page and its form posts
            register_error_page(prefix, error_page)
