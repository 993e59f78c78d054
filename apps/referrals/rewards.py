"""Rewards: a referral succeeds when the referred friend's journey reaches the programme's stage (a later stage of
the same pipeline, or the journey being won, counts too; a lost stage never does). Without a configured stage, a
won journey is the success.

The commit hook picks the committed journey.stage_changed / journey.won events (one indexed read) and queues
`process_events` with their ids; the work runs in Celery. Each referral has at most one reward (a one-to-one row,
written under the referral's lock), so a redelivered task or a second event adds nothing.

A queued task that was lost (the broker down at the commit) is made good by the beat sweep `sweep`: referrals still
waiting whose friend has a journey standing at a stage that counts get their reward then.
"""

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.events.models import Event
from apps.journeys.public import Journey, Stage, StageKind
from apps.referrals.models import Referral, ReferralStatus, Reward

logger = logging.getLogger("apps.referrals")

EVENT_TYPES = ("journey.stage_changed", "journey.won")


def queue_committed_events(event_ids) -> None:
    """The on_events_committed listener. Never raises (a failure is logged; the commit stays a success)."""
    try:
        ids = [
            str(i)
            for i in Event.objects.unscoped()
            .filter(id__in=list(event_ids), type__in=EVENT_TYPES)
            .values_list("id", flat=True)
        ]
        if ids:
            from apps.referrals.tasks import process_events

            process_events.delay(ids)
    except Exception as exc:
        logger.warning("referral rewards for %d events not queued (%s)", len(event_ids), type(exc).__name__)


def _reached(programme, stage: Stage | None, event_type: str) -> bool:
    if stage is None or stage.kind == StageKind.LOST:
        return False
    target = programme.success_stage
    if target is None:
        return event_type == "journey.won" or stage.kind == StageKind.WON
    if stage.id == target.id:
        return True
    if stage.pipeline_id != target.pipeline_id:
        return False
    return stage.kind == StageKind.WON or stage.position >= target.position


def process_events(event_ids) -> int:
    """Record the rewards the committed events earned. Idempotent. Returns how many rewards were recorded."""
    events = Event.objects.unscoped().filter(id__in=list(event_ids), type__in=EVENT_TYPES).order_by("created_at")
    recorded = 0
    for event in events:
        patient_id = (event.data or {}).get("patientId")
        stage_id = (event.data or {}).get("stageId")
        if not patient_id or not stage_id:
            continue
        referrals = list(
            Referral.objects.for_org(event.organization_id)
            .filter(referred_patient_id=patient_id, status=ReferralStatus.SUBMITTED)
            .select_related("programme__success_stage")
        )
        if not referrals:
            continue
        stage = Stage.objects.for_org(event.organization_id).filter(id=stage_id).first()
        for referral in referrals:
            if _reached(referral.programme, stage, event.type):
                recorded += _reward(referral, journey_id=event.subject_id, stage_id=stage_id)
    return recorded


@transaction.atomic
def _reward(referral: Referral, *, journey_id, stage_id) -> int:
    referral = Referral.objects.for_org(referral.organization_id).select_for_update().get(id=referral.id)
    if referral.status != ReferralStatus.SUBMITTED:
        return 0
    programme = referral.programme
    try:
        with transaction.atomic():
            Reward.objects.create(
                organization_id=referral.organization_id,
                referral=referral,
                advocate_id=referral.advocate_id,
                description=programme.reward_description,
                amount=programme.reward_amount,
                currency=programme.reward_currency,
                journey_id=journey_id,
                stage_id=stage_id,
            )
    except IntegrityError:
        return 0
    referral.status, referral.succeeded_at = ReferralStatus.SUCCESSFUL, timezone.now()
    referral.save(update_fields=["status", "succeeded_at", "updated_at"])
    return 1


SWEEP_BATCH = 500


def sweep() -> int:
    """Reward waiting referrals whose friend's journey already stands at a stage that counts (every practice), a
    batch of referrals and their friends' journeys at a time. Returns how many rewards were recorded."""
    recorded = 0
    waiting = (
        Referral.objects.unscoped()
        .filter(status=ReferralStatus.SUBMITTED, referred_patient__isnull=False, programme__active=True)
        .select_related("programme__success_stage")
        .order_by("id")
    )
    after = None
    while True:
        batch = list((waiting.filter(id__gt=after) if after else waiting)[:SWEEP_BATCH])
        if not batch:
            return recorded
        after = batch[-1].id
        journeys: dict = {}
        for journey in (
            Journey.objects.unscoped()
            .filter(patient_id__in={r.referred_patient_id for r in batch})
            .select_related("stage")
            .order_by("created_at")
        ):
            journeys.setdefault((journey.organization_id, journey.patient_id), []).append(journey)
        for referral in batch:
            for journey in journeys.get((referral.organization_id, referral.referred_patient_id), []):
                if _reached(referral.programme, journey.stage, ""):
                    recorded += _reward(referral, journey_id=journey.id, stage_id=journey.stage_id)
                    break
