from django.apps import AppConfig


class PartnersConfig(AppConfig):
    name = "apps.partners"
    label = "partners"
    verbose_name = "Partner agencies"
