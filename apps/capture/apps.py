from django.apps import AppConfig


class CaptureConfig(AppConfig):
    name = "apps.capture"
    label = "capture"
    verbose_name = "Lead capture"

    def ready(self) -> None:
        from apps.capture import services
        from apps.capture.renderers import embed_touches, embed_touches_field
        from apps.patients.public import PatientEmbed, on_erase, on_merge, register_patient_embed

        on_erase(services.erase_captures_of_patients)
        on_merge(services.repoint_captures_to_survivor)
        register_patient_embed(PatientEmbed(name="touches", field=embed_touches_field, render=embed_touches))
