from django.apps import AppConfig


class LeadAdsConfig(AppConfig):
    name = "apps.leadads"
    label = "leadads"
    verbose_name = "Native lead ads"

    def ready(self) -> None:
        from apps.leadads.hooks import (
            erase_lead_ads_of_patients,
            repoint_lead_ads_to_survivor,
        )
        from apps.patients.public import on_erase, on_merge

        on_erase(erase_lead_ads_of_patients)
        on_merge(repoint_lead_ads_to_survivor)
