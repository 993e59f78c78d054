from django.apps import AppConfig


class DepositsConfig(AppConfig):
    name = "apps.deposits"
    label = "deposits"
    verbose_name = "Deposits and payments"

    def ready(self):
        from apps.core.browser_pages import register_error_page
        from apps.deposits.hooks import erase_deposits_of_patients, repoint_deposits_to_survivor
        from apps.deposits.pages import BROWSER_PAGES, error_page
        from apps.deposits.renderers import embed_deposits, embed_deposits_field
        from apps.patients.public import PatientEmbed, on_erase, on_merge, register_patient_embed

        on_erase(erase_deposits_of_patients)
        on_merge(repoint_deposits_to_survivor)
        register_patient_embed(PatientEmbed(name="deposits", field=embed_deposits_field, render=embed_deposits))
        for prefix in BROWSER_PAGES:  # the patient's deposit page and its checkout post
            register_error_page(prefix, error_page)
