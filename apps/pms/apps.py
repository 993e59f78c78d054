"""The connected practice-management system: its connection, the historical import, live changes by signed
callback, patients linked to PMS patients, mirrored appointments and the sync review queue."""

from django.apps import AppConfig


class PmsConfig(AppConfig):
    name = "apps.pms"
    label = "pms"
    verbose_name = "Connected PMS"

    def ready(self) -> None:
        from apps.patients.public import on_erase, on_merge, register_patient_embed
        from apps.pms.embeds import PMS_EMBED
        from apps.pms.hooks import erase_links_of_patients, repoint_links_to_survivor

        on_erase(erase_links_of_patients)
        on_merge(repoint_links_to_survivor)
        register_patient_embed(PMS_EMBED)
