from django.apps import AppConfig


class OauthConfig(AppConfig):
    name = "apps.oauth"
    label = "oauth"
    verbose_name = "OAuth server and connected apps"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from apps.oauth import connections
        from apps.webhooks.services import register_connection_checker

        register_connection_checker(connections.still_connected)
