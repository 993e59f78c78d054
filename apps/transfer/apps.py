from django.apps import AppConfig


class TransferConfig(AppConfig):
    name = "apps.transfer"
    label = "transfer"
    verbose_name = "Data transfer"
