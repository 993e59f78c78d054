"""Celery tasks of the chat widget: building the inbox rows of a visitor's socket message (and the sweep that stores
any whose task never ran). Thin: the work is in apps.widget.services."""

from celery import shared_task

from apps.widget import services


@shared_task(name="apps.widget.tasks.store_received")
def store_received(received_id: str) -> bool:
    return services.received_store(received_id=received_id)


@shared_task(name="apps.widget.tasks.store_received_many")
def store_received_many(received_ids: list[str]) -> int:
    """A batch of socket messages accepted together (apps.widget.services.messages_accept), filed one by one."""
    return sum(services.received_store(received_id=received_id) for received_id in received_ids)


@shared_task(name="apps.widget.tasks.sweep_received")
def sweep_received() -> int:
    return services.received_sweep()
