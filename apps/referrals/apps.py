from django.apps import AppConfig


class ReferralsConfig(AppConfig):
    name = "apps.referrals"
    label = "referrals"
    verbose_name = "Referrals"

    def ready(self) -> None:
        from apps.events.services import on_events_committed
        from apps.patients.public import on_erase, on_merge, register_patient_embed
        from apps.referrals.embeds import REFERRAL_EMBED
        from apps.referrals.hooks import erase_referrals_of_patients, repoint_referrals_to_survivor
        from apps.referrals.rewards import queue_committed_events

        on_events_committed(queue_committed_events, with_event_ids=True)
        register_patient_embed(REFERRAL_EMBED)
        on_erase(erase_referrals_of_patients)
        on_merge(repoint_referrals_to_survivor)
