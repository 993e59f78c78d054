from django.apps import AppConfig


class AssistConfig(AppConfig):
    name = "apps.assist"
    label = "assist"
    verbose_name = "AI assist"
