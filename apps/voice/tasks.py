"""Celery entry points of AI Voice: thin and safe to run twice (a lease taken by a conditional update decides who
works a job)."""

from celery import shared_task

from apps.voice import services


@shared_task(name="apps.voice.tasks.transcribe")
def transcribe(transcript_id: str) -> str:
    return services.transcript_process(transcript_id)


@shared_task(name="apps.voice.tasks.summarize")
def summarize(summary_id: str) -> str:
    return services.summary_process(summary_id)


@shared_task(name="apps.voice.tasks.sweep")
def sweep() -> dict:
    """Every minute (beat): lost jobs queued again, automatic transcripts and summaries requested."""
    return services.sweep()
