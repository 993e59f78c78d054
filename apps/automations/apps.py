"""Automations: rules triggered by catalogue events or schedules, with conditions and actions run through the domain
services; every run recorded.
"""

from django.apps import AppConfig


class AutomationsConfig(AppConfig):
    name = "apps.automations"
    label = "automations"
    verbose_name = "Automations"

    def ready(self) -> None:
        from apps.automations.runner import queue_committed_events
        from apps.events.services import on_events_committed

        on_events_committed(queue_committed_events, with_event_ids=True)
