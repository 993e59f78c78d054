from django.apps import AppConfig


class AutomationsConfig(AppConfig):
    name = "apps.automations"
    label = "automations"
    verbose_name = "Automations"
