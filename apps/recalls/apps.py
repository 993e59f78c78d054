"""Recalls (due dates by type, reminders through conversations) and the waitlist (patients wanting an earlier
slot, offered when one frees)."""

from django.apps import AppConfig


class RecallsConfig(AppConfig):
    name = "apps.recalls"
    label = "recalls"
    verbose_name = "Recalls and waitlist"

    def ready(self) -> None:
        from apps.appointments.public import on_completed, on_slot_freed
        from apps.clinical.public import register_record_section
        from apps.patients.public import on_erase, on_merge
        from apps.recalls import hooks

        on_erase(hooks.erase_recalls_of_patients)
        on_merge(hooks.repoint_recalls_to_survivor)
        on_slot_freed(hooks.queue_slot_offers)
        on_completed(hooks.queue_next_recalls)
        register_record_section("recalls", hooks.recalls_section)
        register_record_section("waitlist", hooks.waitlist_section)
