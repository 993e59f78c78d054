from django.apps import AppConfig


class BootstrapConfig(AppConfig):
    name = "apps.bootstrap"
    label = "bootstrap"
    verbose_name = "Bootstrap"
