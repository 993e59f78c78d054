from django.apps import AppConfig


class ClinicalConfig(AppConfig):
    name = "apps.clinical"
    label = "clinical"
    verbose_name = "Clinical workspace"
