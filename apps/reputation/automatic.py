"""The automatic review request after a completed appointment (the practice's `autoRequestAfterAppointment`).

The commit hook (`on_events_committed`, registered in ReputationConfig.ready()) picks the committed
`appointment.status_changed` events whose data says the appointment is now `completed` (one indexed read), keeps
those of practices with the setting on, and queues `apps.reputation.tasks.auto_request` for each appointment with a
countdown of the practice's `autoRequestDelayMinutes`. The task reads everything again when it runs: the setting
still on, the appointment still completed, the patient still active, an active review source at the appointment's
location. It is skipped when the appointment already has a request or the patient was asked in the last 30 days;
otherwise it sends through `services.request_create`, so consent, opt-outs, blocks and the conversations pipeline
apply as for a manual request. A skipped send is logged (ids only) and nothing is stored.

Two runs for one appointment (a redelivered task, a second event) send one request: the check and the send run
under a transaction advisory lock on (practice, patient), which also keeps two appointments of one patient
completed together from sending two requests within 30 days.

There is no beat sweep: a task that could not be queued (the broker down at the commit) is lost and that
appointment gets no automatic request (a member can still send one with POST /reputation/requests).
"""

import logging
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from apps.appointments.public import Appointment, AppointmentStatus
from apps.events.models import Event
from apps.patients.public import PatientMerged, Status
from apps.reputation import services
from apps.reputation.errors import NoReviewSource, RequestNotSent
from apps.reputation.models import ReputationSettings, ReviewRequest

logger = logging.getLogger("apps.reputation")

EVENT_TYPE = "appointment.status_changed"
RECENT = timedelta(days=30)  # a patient asked within this long is not asked again automatically

SENT = "sent"


def queue_committed_events(event_ids) -> None:
    """The on_events_committed listener. Never raises (a failure is logged; the commit stays a success)."""
    try:
        completed = list(
            Event.objects.unscoped()
            .filter(id__in=list(event_ids), type=EVENT_TYPE, data__status=AppointmentStatus.COMPLETED)
            .values_list("organization_id", "subject_id")
        )
        if not completed:
            return
        delays = dict(
            ReputationSettings.objects.unscoped()
            .filter(organization_id__in={org for org, _ in completed}, auto_request_after_appointment=True)
            .values_list("organization_id", "auto_request_delay_minutes")
        )
        from apps.reputation.tasks import auto_request

        for organization_id, appointment_id in completed:
            if organization_id in delays:
                auto_request.apply_async(
                    (str(organization_id), str(appointment_id)), countdown=delays[organization_id] * 60
                )
    except Exception as exc:
        logger.warning("automatic review requests for %d events not queued (%s)", len(event_ids), type(exc).__name__)


def _skip(appointment_id, reason: str) -> str:
    logger.info("automatic review request for appointment %s skipped (%s)", appointment_id, reason)
    return reason


def _patient_inactive(patient) -> bool:
    return patient.merged_into_id is not None or patient.archived_at is not None or patient.status == Status.DECEASED


def auto_request_send(*, organization_id, appointment_id) -> str:
    """Send the automatic review request of a completed appointment, if it is still due. Returns SENT or the reason
    it was skipped (logged, nothing stored). Idempotent."""
    settings = services.settings_get(organization=organization_id)
    if not settings.auto_request_after_appointment:
        return _skip(appointment_id, "SETTING_OFF")
    appointment = (
        Appointment.objects.for_org(organization_id)
        .select_related("organization", "patient", "location")
        .filter(id=appointment_id)
        .first()
    )
    if appointment is None:
        return _skip(appointment_id, "APPOINTMENT_GONE")
    if appointment.status != AppointmentStatus.COMPLETED:
        return _skip(appointment_id, "NOT_COMPLETED")
    if _patient_inactive(appointment.patient):
        return _skip(appointment_id, "PATIENT_INACTIVE")
    location = appointment.location
    if location is None or location.archived_at is not None:
        return _skip(appointment_id, "NO_LOCATION")
    if services.active_source(organization=organization_id, location_id=location.id) is None:
        return _skip(appointment_id, "NO_REVIEW_SOURCE")
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"reputation-auto:{organization_id}:{appointment.patient_id}"],
            )
        requests = ReviewRequest.objects.for_org(organization_id)
        if requests.filter(appointment_id=appointment.id).exists():
            return _skip(appointment_id, "ALREADY_REQUESTED")
        if requests.filter(patient_id=appointment.patient_id, created_at__gte=timezone.now() - RECENT).exists():
            return _skip(appointment_id, "RECENTLY_REQUESTED")
        try:
            services.request_create(
                organization=appointment.organization,
                user=None,
                patient=appointment.patient,
                location=location,
                channel=settings.auto_request_channel,
                appointment=appointment,
            )
        except RequestNotSent as refusal:
            return _skip(appointment_id, (refusal.details or {}).get("reason") or "NOT_SENT")
        except (NoReviewSource, PatientMerged) as refusal:
            return _skip(appointment_id, refusal.code)
    return SENT
