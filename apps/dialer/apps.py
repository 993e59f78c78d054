from django.apps import AppConfig


class DialerConfig(AppConfig):
    name = "apps.dialer"
    label = "dialer"
    verbose_name = "Dialer"

    def ready(self) -> None:
        from apps.dialer.hooks import erase_calls_of_patients, repoint_calls_to_survivor
        from apps.patients.public import on_erase, on_merge

        on_erase(erase_calls_of_patients)
        on_merge(repoint_calls_to_survivor)
