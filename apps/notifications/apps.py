from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "apps.notifications"
    label = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        from apps.events.services import on_events_committed
        from apps.notifications.hooks import erase_notifications_of_patients, repoint_notifications_to_survivor
        from apps.notifications.producers import queue_committed_events
        from apps.patients.public import on_erase, on_merge

        on_events_committed(queue_committed_events, with_event_ids=True)
        on_erase(erase_notifications_of_patients)
        on_merge(repoint_notifications_to_survivor)
