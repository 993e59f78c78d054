from django.apps import AppConfig


class CaptureConfig(AppConfig):
    name = "apps.capture"
    label = "capture"
    verbose_name = "Lead capture"

    def ready(self) -> None:
        from apps.capture.hooks import erase_captures_of_patients, repoint_captures_to_survivor
        from apps.capture.renderers import embed_touches, embed_touches_field
        from apps.patients.public import PatientEmbed, on_erase, on_merge, register_patient_embed

        on_erase(erase_captures_of_patients)
        on_merge(repoint_captures_to_survivor)
        register_patient_embed(PatientEmbed(name="touches", field=embed_touches_field, render=embed_touches))
