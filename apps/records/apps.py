from django.apps import AppConfig


class RecordsConfig(AppConfig):
    name = "apps.records"
    label = "records"
    verbose_name = "Clinical records"

    def ready(self) -> None:
        from apps.clinical.public import register_record_section
        from apps.core.browser_pages import register_error_page
        from apps.patients.public import on_erase, on_merge
        from apps.records import selectors
        from apps.records.hooks import erase_records_of_patients, move_records_to_survivor
        from apps.records.pages import BROWSER_PAGES, error_page

        register_record_section("notes", selectors.record_notes)
        register_record_section("medicalHistory", selectors.record_medical_history)
        register_record_section("alerts", selectors.record_alerts)
        on_erase(erase_records_of_patients)
        on_merge(move_records_to_survivor)
        for prefix in BROWSER_PAGES:
            register_error_page(prefix, error_page)
