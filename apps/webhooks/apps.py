from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "apps.webhooks"
    label = "webhooks"
    verbose_name = "Outbound webhooks"

    def ready(self) -> None:
        from apps.events.services import on_events_committed

        on_events_committed(_publish_fan_out)


def _publish_fan_out() -> None:
    """After a commit that recorded events. If the broker is down the sweep picks the events up within a minute."""
    import logging

    from apps.webhooks.tasks import fan_out

    try:
        fan_out.delay()
    except Exception:  # the broker being unreachable must not fail the request that already committed
        logging.getLogger("apps.webhooks").warning("fan-out not published; the sweep will pick the events up")
