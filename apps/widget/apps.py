from django.apps import AppConfig


class WidgetConfig(AppConfig):
    name = "apps.widget"
    label = "widget"
    verbose_name = "Chat widget"

    def ready(self) -> None:
        from apps.conversations.public import on_widget_message
        from apps.patients.public import on_erase, on_merge
        from apps.widget.hooks import erase_visitors_of_patients, repoint_visitors_to_survivor
        from apps.widget.live import push_reply

        on_widget_message(push_reply)
        on_erase(erase_visitors_of_patients)
        on_merge(repoint_visitors_to_survivor)
