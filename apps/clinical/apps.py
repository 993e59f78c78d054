"""The clinical workspace's hub: the day list, booking from the clinical diary, the patient record, the PMS inbox,
practitioners linked to member accounts, chairs, clinical storage and patient forms."""

from django.apps import AppConfig


class ClinicalConfig(AppConfig):
    name = "apps.clinical"
    label = "clinical"
    verbose_name = "Clinical workspace"

    def ready(self):
        from apps.clinical.hooks import erase_clinical_rows_of_patients, repoint_clinical_rows_to_survivor
        from apps.patients.public import on_erase, on_merge

        on_erase(erase_clinical_rows_of_patients)
        on_merge(repoint_clinical_rows_to_survivor)
