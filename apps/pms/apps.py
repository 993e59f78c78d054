from django.apps import AppConfig


class PmsConfig(AppConfig):
    name = "apps.pms"
    label = "pms"
    verbose_name = "Connected PMS"
