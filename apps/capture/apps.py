from django.apps import AppConfig


class CaptureConfig(AppConfig):
    name = "apps.capture"
    label = "capture"
    verbose_name = "Lead capture"

    def ready(self):
        from apps.capture.hooks import erase_captures_of_patients, repoint_captures_to_survivor
        from apps.patients import hooks

        hooks.on_erase(erase_captures_of_patients)
        hooks.on_merge(repoint_captures_to_survivor)
