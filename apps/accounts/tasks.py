from celery import shared_task
from django.contrib.sessions.models import Session
from django.utils import timezone


@shared_task(name="apps.accounts.tasks.purge_expired_sessions")
def purge_expired_sessions() -> int:
    """Hourly (beat): drop expired browser sessions. Idempotent."""
    deleted, _ = Session.objects.filter(expire_date__lt=timezone.now()).delete()
    return deleted
