"""What makes notifications, besides team chat mentions (which call apps.notifications.public.notify):

- assigned_conversation: a committed conversation.updated with action "assigned" naming an assignee other than the
  member who assigned it → that assignee (if the conversation is still theirs when the task runs).
- new_lead: a committed patient.created for an enquiry or a lead → the members whose role works leads (owner,
  manager, front desk, telesales), except the member who entered it. More than NEW_LEAD_DIGEST_AT new leads in one
  batch (an import) make one "N new leads" notification each instead of one per lead.
- task_due: the beat sweep `notify_due_tasks` → the assignee of an open task whose due time has come, once per task
  and due time (a new due time is a new notice), for tasks that fell due within SVC_NOTIFICATIONS_TASK_DUE_LOOKBACK.

The commit hook only picks the relevant event ids (one indexed read) and queues `process_events` with them; the
work runs in Celery. Each notification carries the event id as its dedupe key, so a redelivered task adds nothing.
"""

import logging
from datetime import timedelta
from itertools import groupby

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from apps.accounts.models import Membership
from apps.accounts.roles import FRONT_DESK, MANAGER, OWNER, TELESALES
from apps.conversations.public import Kind as ChannelKind
from apps.conversations.public import conversation_get
from apps.events.models import Event
from apps.notifications.models import Kind, TaskDueNotice
from apps.notifications.services import notify
from apps.patients.public import Patient
from apps.patients.public import Status as PatientStatus
from apps.tasks.public import Task, TaskStatus

logger = logging.getLogger("apps.notifications")

EVENT_TYPES = ("conversation.updated", "patient.created")
LEAD_STATUSES = (PatientStatus.ENQUIRY, PatientStatus.LEAD)
LEAD_ROLES = (OWNER, MANAGER, FRONT_DESK, TELESALES)
NEW_LEAD_DIGEST_AT = 10
TASK_DUE_BATCH = 500
CHANNEL_WORDS = {
    ChannelKind.SMS: "SMS",
    ChannelKind.EMAIL: "E-mail",
    ChannelKind.MESSAGING_APP: "Messaging app",
    ChannelKind.TELEPHONY_MESSAGING: "Text",
}


# --- after a commit -------------------------------------------------------------------------------------------------


def queue_committed_events(event_ids) -> None:
    """The on_events_committed listener: queue the relevant committed events for `process_events`. Never raises
    (a failure is logged; the commit stays a success)."""
    try:
        ids = [str(i) for i in Event.objects.unscoped().filter(id__in=list(event_ids), type__in=EVENT_TYPES)
               .values_list("id", flat=True)]  # fmt: skip
        if ids:
            from apps.notifications.tasks import process_events

            process_events.delay(ids)
    except Exception as exc:
        logger.warning("notifications for %d events not queued (%s)", len(event_ids), type(exc).__name__)


def process_events(event_ids) -> int:
    """Turn committed events into notifications. Idempotent (dedupe key: the event id). Returns how many stored."""
    events = list(Event.objects.unscoped().filter(id__in=list(event_ids), type__in=EVENT_TYPES).order_by("created_at"))
    stored = 0
    for organization_id, practice_events in groupby(
        sorted(events, key=lambda e: (str(e.organization_id), e.created_at)), key=lambda e: e.organization_id
    ):
        practice_events = list(practice_events)
        for event in practice_events:
            if event.type == "conversation.updated":
                stored += _conversation_assigned(event)
        stored += _new_leads(organization_id, [e for e in practice_events if e.type == "patient.created"])
    return stored


def _acting_user_id(event: Event) -> str | None:
    return event.actor_id if event.actor_type == "user" else None


def _conversation_assigned(event: Event) -> int:
    data = event.data or {}
    assignee_id = data.get("assigneeId")
    if data.get("action") != "assigned" or not assignee_id or assignee_id == _acting_user_id(event):
        return 0
    conversation = conversation_get(organization=event.organization_id, conversation_id=event.subject_id)
    if conversation is None or str(conversation.assignee_id) != assignee_id:
        return 0  # gone, or assigned elsewhere since
    channel = CHANNEL_WORDS.get(conversation.channel, "A")
    stored = notify(
        organization=event.organization_id,
        user_ids=[assignee_id],
        kind=Kind.ASSIGNED_CONVERSATION,
        title=f"{channel} conversation assigned to you",
        subject_type="conversation",
        subject_id=conversation.id,
        data={
            "conversationId": str(conversation.id),
            "channel": conversation.channel,
            "patientId": str(conversation.patient_id),
            "assignedBy": _acting_user_id(event),
        },
        patient_id=conversation.patient_id,
        dedupe_key=f"event:{event.id}",
    )
    return len(stored)


def _lead_name(patient) -> str:
    initial = (patient.last_name or "").strip()[:1]
    return f"{patient.first_name.strip()} {initial}.".strip() if initial else patient.first_name.strip()


def _new_leads(organization_id, events: list[Event]) -> int:
    events = [e for e in events if (e.data or {}).get("status") in LEAD_STATUSES]
    if not events:
        return 0
    patients = {
        str(patient.id): patient
        for patient in Patient.objects.for_org(organization_id).filter(
            id__in=[e.subject_id for e in events],
            status__in=LEAD_STATUSES,
            archived_at__isnull=True,
            merged_into__isnull=True,
        )
    }
    events = [e for e in events if e.subject_id in patients]
    if not events:
        return 0
    workers = list(
        Membership.objects.for_org(organization_id).filter(role__in=LEAD_ROLES).values_list("user_id", flat=True)
    )
    stored = 0
    with transaction.atomic():
        if len(events) > NEW_LEAD_DIGEST_AT:
            actors = {_acting_user_id(e) for e in events}
            recipients = [u for u in workers if not (len(actors) == 1 and str(u) in actors)]
            return len(
                notify(
                    organization=organization_id,
                    user_ids=recipients,
                    kind=Kind.NEW_LEAD,
                    title=f"{len(events)} new leads",
                    subject_type="patients",
                    subject_id=organization_id,
                    data={"count": len(events), "patientIds": [e.subject_id for e in events[:100]]},
                    dedupe_key=f"event:{events[0].id}",
                )
            )
        for event in events:
            patient = patients[event.subject_id]
            actor = _acting_user_id(event)
            stored += len(
                notify(
                    organization=organization_id,
                    user_ids=[u for u in workers if str(u) != actor],
                    kind=Kind.NEW_LEAD,
                    title=f"New lead: {_lead_name(patient)}",
                    subject_type="patient",
                    subject_id=patient.id,
                    data={"patientId": str(patient.id), "status": patient.status},
                    patient_id=patient.id,
                    dedupe_key=f"event:{event.id}",
                )
            )
    return stored


# --- the task-due sweep ---------------------------------------------------------------------------------------------


def notify_due_tasks(*, now=None) -> int:
    """Tell each assignee once that an open task of theirs fell due (due within the lookback, not noticed yet for
    that due time). The notice row and the notification are written together. Returns how many tasks were noticed."""
    now = now or timezone.now()
    since = now - timedelta(seconds=settings.SVC_NOTIFICATIONS_TASK_DUE_LOOKBACK)
    noticed = 0
    while True:
        due = list(
            Task.objects.unscoped()
            .filter(status=TaskStatus.OPEN, assignee__isnull=False, due_at__gt=since, due_at__lte=now)
            .exclude(
                Exists(
                    TaskDueNotice.objects.unscoped().filter(
                        organization_id=OuterRef("organization_id"), task_id=OuterRef("id"), due_at=OuterRef("due_at")
                    )
                )
            )
            .only("id", "organization_id", "assignee_id", "due_at", "title", "patient_id")
            .order_by("due_at", "id")[:TASK_DUE_BATCH]
        )
        for task in due:
            noticed += _notice_task_due(task)
        if len(due) < TASK_DUE_BATCH:
            return noticed


def _notice_task_due(task) -> int:
    with transaction.atomic():
        _, created = TaskDueNotice.objects.for_org(task.organization_id).get_or_create(
            organization_id=task.organization_id, task_id=task.id, due_at=task.due_at
        )
        if not created:
            return 0  # a concurrent sweep noticed it
        notify(
            organization=task.organization_id,
            user_ids=[task.assignee_id],
            kind=Kind.TASK_DUE,
            title=f"Task due: {task.title}",
            subject_type="task",
            subject_id=task.id,
            data={"taskId": str(task.id), "dueAt": task.due_at.isoformat().replace("+00:00", "Z")},
            patient_id=task.patient_id,
            dedupe_key=f"task_due:{task.id}:{task.due_at.isoformat()}",
        )
        return 1


# --- retention ------------------------------------------------------------------------------------------------------


def purge_old(*, now=None) -> tuple[int, int]:
    """Notifications older than SVC_NOTIFICATIONS_RETENTION_DAYS, and task-due notices past any lookback. Returns
    (notifications, notices) deleted."""
    from apps.notifications.models import Notification

    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.SVC_NOTIFICATIONS_RETENTION_DAYS)
    notifications, _ = Notification.objects.unscoped().filter(created_at__lt=cutoff).delete()
    notice_cutoff = now - 2 * timedelta(seconds=settings.SVC_NOTIFICATIONS_TASK_DUE_LOOKBACK)
    notices, _ = TaskDueNotice.objects.unscoped().filter(due_at__lt=notice_cutoff).delete()
    return notifications, notices
