"""Treatment plans (items with tooth and surface, fees from the patient's price list, phases, status) and
treatment templates."""

from django.apps import AppConfig


class PlansConfig(AppConfig):
    name = "apps.plans"
    label = "plans"
    verbose_name = "Treatment plans"

    def ready(self) -> None:
        from apps.clinical.public import register_record_section
        from apps.patients.public import on_erase, on_merge
        from apps.plans.hooks import erase_plans_of_patients, repoint_plans_to_survivor
        from apps.plans.selectors import record_charting_summary, record_treatment_plans

        on_erase(erase_plans_of_patients)
        on_merge(repoint_plans_to_survivor)
        register_record_section("treatmentPlans", record_treatment_plans)
        register_record_section("chartingSummary", record_charting_summary)
