from django.apps import AppConfig


class AgreementsConfig(AppConfig):
    name = "apps.agreements"
    label = "agreements"
    verbose_name = "Agreements"
