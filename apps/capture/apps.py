from django.apps import AppConfig


class CaptureConfig(AppConfig):
    name = "apps.capture"
    label = "capture"
    verbose_name = "Lead capture"

    def ready(self) -> None:
        from apps.capture import services
        from apps.patients import hooks

        hooks.on_erase(services.erase_captures_of_patients)
        hooks.on_merge(services.repoint_captures_to_survivor)
