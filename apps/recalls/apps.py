from django.apps import AppConfig


class RecallsConfig(AppConfig):
    name = "apps.recalls"
    label = "recalls"
    verbose_name = "Recalls and waitlist"
