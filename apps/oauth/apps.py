from django.apps import AppConfig


class OauthConfig(AppConfig):
    name = "apps.oauth"
    label = "oauth"
    verbose_name = "OAuth server and connected apps"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from apps.core.browser_pages import register_error_page
        from apps.oauth import connections
        from apps.oauth.views import BROWSER_PAGES, error_page
        from apps.webhooks.public import register_connection_checker

        register_connection_checker(connections.still_connected)
        for path in BROWSER_PAGES:  # a failed post from sign-in or consent (CSRF, 413, 500) is a page, not JSON
            register_error_page(path, error_page)
