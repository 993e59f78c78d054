from django.apps import AppConfig


class TodayConfig(AppConfig):
    name = "apps.today"
    label = "today"
    verbose_name = "Today and live updates"

    def ready(self) -> None:
        from apps.events.services import on_events_committed
        from apps.today.live import publish_committed

        on_events_committed(publish_committed, with_event_ids=True)
