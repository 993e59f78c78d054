"""Background delivery of a launched campaign: recipients are released into the conversations pipeline in batches,
within the campaign's hourly and daily pacing.

A release run (`release_run`, the Celery task apps.campaigns.tasks.release_campaign) repeats, for up to
RUN_SECONDS:

1. reserve (a short transaction holding the campaign row FOR NO KEY UPDATE): the campaign must be sending; inside the
   practice's quiet hours (its messaging settings, in its time zone) nothing is released: `release_after` is set to
   their end and the run stops, so the night's allowance is not spent on messages the pipeline would hold until
   morning and send all at once; the clock hour and calendar day of the practice are rolled over when they have
   passed; the batch is BATCH_SIZE or what is left of the hour's and the day's allowance, reserved by adding it to the
   window counters. A full window sets `release_after` to when the next one opens and the run stops (the beat sweep
   restarts the campaign then: pacing is background behaviour, never a 429);
2. release (another transaction): the campaign row is held FOR KEY SHARE and its status read again (a pause or
   cancel that committed since the reservation wins), then up to that many pending recipients are taken with
   SELECT … FOR UPDATE SKIP LOCKED (two workers on one campaign never take the same one), rendered as marketing
   messages (their variable values read in two queries), queued with one queue_messages call (purpose marketing,
   source campaign), and written back with one UPDATE … FROM unnest: released with their Message, or skipped with
   the pipeline's reason;
3. what was reserved and not queued (skipped, or no pending recipient left) is given back to the window counters, and
   a campaign with no pending recipient left is completed.

Locks, always in one order: the campaign row, then its recipients, then messages. A batch holds the campaign row FOR
KEY SHARE for its whole transaction: the two chains' batches and reservations (FOR NO KEY UPDATE) do not wait for
each other, while a pause or cancel (FOR UPDATE) waits for the batch in flight to commit and a batch that starts
after one waits for it and then sees the new status. A cancel then withdraws the queued messages of the batch that
was in flight too (apps.campaigns.services.campaign_cancel).

When the pipeline answers CONNECTION_UNAVAILABLE (the connection was disconnected), the batch's recipients go back to
pending and the campaign is paused with that reason instead of skipping everyone.

A run that still has work asks for the next one after it (a chain); RELEASE_CHAINS chains run per campaign so two
workers share one campaign. `sweep` (beat, every 30 s) starts scheduled campaigns whose time has come and restarts the
chains of a sending campaign whose runs stopped (quiet hours or a full window that ended, a lost task) once its
heartbeat is older than STALE_AFTER.
"""

import logging
import time
import uuid
import zoneinfo
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection as db
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.campaigns import rendering, services, variables
from apps.campaigns.models import Campaign, CampaignRecipient, CampaignStatus, RecipientState
from apps.conversations.public import CONNECTION_UNAVAILABLE, MessagingSettings, queue_messages, quiet_hours_end

logger = logging.getLogger("apps.campaigns")

BATCH_SIZE = 500  # recipients per queue_messages call
# A run stops after this long and asks for the next one, which queues behind the send tasks its batches requested:
# releasing and sending take turns on the workers instead of a run holding one for long.
RUN_SECONDS = 5.0
RELEASE_CHAINS = 2
STALE_AFTER = timedelta(seconds=120)
PAUSED_FOR_CONNECTION = CONNECTION_UNAVAILABLE


def _zone(organization) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(organization.timezone or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


def windows(organization, now: datetime) -> tuple[datetime, datetime, datetime, datetime]:
    """(this hour's start, the next hour's, today's start, tomorrow's) on the practice's clock."""
    zone = _zone(organization)
    local = now.astimezone(zone)
    hour = local.replace(minute=0, second=0, microsecond=0)
    day = local.replace(hour=0, minute=0, second=0, microsecond=0)
    # Aware arithmetic with a ZoneInfo is wall-clock arithmetic: the next local midnight, whatever the DST change.
    return hour, hour + timedelta(hours=1), day, day + timedelta(days=1)


@dataclass(frozen=True)
class Reservation:
    count: int  # recipients this batch may release (0: none now)
    stop: str = ""  # why not: "not_sending", "quiet_hours", "window_full"


def _quiet_until(organization, now: datetime) -> datetime | None:
    """The end of the practice's quiet hours when `now` is inside them (the pipeline's own rule and settings)."""
    rules = MessagingSettings.objects.for_org(organization).first() or MessagingSettings(organization=organization)
    return quiet_hours_end(rules, organization.timezone, now)


def _reserve(campaign_id, now: datetime) -> Reservation:
    with transaction.atomic():
        campaign = (
            Campaign.objects.unscoped()
            # Not FOR UPDATE: a batch in flight holds the row FOR KEY SHARE. This row only, not the practice's.
            .select_for_update(no_key=True, of=("self",))
            .select_related("organization")
            .filter(id=campaign_id)
            .first()
        )
        if campaign is None or campaign.status != CampaignStatus.SENDING:
            return Reservation(0, "not_sending")
        quiet_end = _quiet_until(campaign.organization, now)
        if quiet_end is not None:
            # Nothing is released before the quiet hours end (the allowance is not spent on held messages); the
            # sweep restarts the campaign then.
            campaign.release_after, campaign.release_heartbeat_at = quiet_end, None
            campaign.save(update_fields=["release_after", "release_heartbeat_at", "updated_at"])
            return Reservation(0, "quiet_hours")
        hour, next_hour, day, next_day = windows(campaign.organization, now)
        if campaign.hour_window_start != hour:
            campaign.hour_window_start, campaign.hour_released = hour, 0
        if campaign.day_window_start != day:
            campaign.day_window_start, campaign.day_released = day, 0
        allowed, opens = BATCH_SIZE, None
        if campaign.daily_limit is not None:
            left = campaign.daily_limit - campaign.day_released
            if left <= 0:
                opens = next_day
            allowed = min(allowed, left)
        if campaign.hourly_limit is not None and opens is None:
            left = campaign.hourly_limit - campaign.hour_released
            if left <= 0:
                opens = next_hour
            allowed = min(allowed, left)
        if opens is not None:
            # No run works on it until the window opens; the sweep restarts it then (no heartbeat to wait out).
            campaign.release_after, campaign.release_heartbeat_at = opens, None
            campaign.save(update_fields=_WINDOW_FIELDS)
            return Reservation(0, "window_full")
        campaign.hour_released += allowed
        campaign.day_released += allowed
        campaign.release_after, campaign.release_heartbeat_at = None, timezone.now()
        campaign.save(update_fields=_WINDOW_FIELDS)
        return Reservation(allowed)


_WINDOW_FIELDS = [
    "hour_window_start",
    "hour_released",
    "day_window_start",
    "day_released",
    "release_after",
    "release_heartbeat_at",
    "updated_at",
]


def _give_back(campaign_id, count: int, now: datetime) -> None:
    """Return reserved allowance that was not used to the windows it was taken from (if they are still current)."""
    if count <= 0:
        return
    with transaction.atomic():
        campaign = (
            Campaign.objects.unscoped()
            .select_for_update(no_key=True, of=("self",))
            .select_related("organization")
            .filter(id=campaign_id)
            .first()
        )
        if campaign is None:
            return
        hour, _, day, _ = windows(campaign.organization, now)
        if campaign.hour_window_start == hour:
            campaign.hour_released = max(0, campaign.hour_released - count)
        if campaign.day_window_start == day:
            campaign.day_released = max(0, campaign.day_released - count)
        campaign.save(update_fields=["hour_released", "day_released", "updated_at"])


_WRITE_BACK_SQL = f"""
    UPDATE {CampaignRecipient._meta.db_table} AS r
    SET state = v.state, skip_reason = v.reason, message_id = v.message_id,
        released_at = CASE WHEN v.state = 'released' THEN %s ELSE r.released_at END, updated_at = %s
    FROM unnest(%s::uuid[], %s::text[], %s::text[], %s::uuid[]) AS v(id, state, reason, message_id)
    WHERE r.id = v.id AND r.campaign_id = %s
"""  # noqa: S608 - the model's own table name; every value is a bound parameter


@dataclass(frozen=True)
class BatchResult:
    taken: int
    queued: int
    skipped: int
    connection_unavailable: bool = False


_KEY_SHARE_SQL = f"SELECT status FROM {Campaign._meta.db_table} WHERE id = %s FOR KEY SHARE"  # noqa: S608


def _share_locked_status(campaign_id) -> str | None:
    """Hold the campaign row FOR KEY SHARE until the transaction ends and read its status as committed now.

    The weakest row lock that conflicts with FOR UPDATE: a pause or cancel (FOR UPDATE) waits for this batch, a
    batch waits for a pause or cancel in progress (and then reads the status it committed), and batches and
    reservations (FOR NO KEY UPDATE) of the other chain go on meanwhile. The ORM offers FOR UPDATE and FOR NO KEY
    UPDATE only, hence the SQL."""
    with db.cursor() as cursor:
        cursor.execute(_KEY_SHARE_SQL, [campaign_id])
        row = cursor.fetchone()
    return row[0] if row else None


def _release_batch(campaign_id, limit: int, now: datetime) -> BatchResult:
    with transaction.atomic():
        if _share_locked_status(campaign_id) != CampaignStatus.SENDING:
            return BatchResult(0, 0, 0)
        campaign = Campaign.objects.unscoped().select_related("organization").get(id=campaign_id)
        organization = campaign.organization
        rows = list(
            CampaignRecipient.objects.for_org(organization)
            .filter(campaign_id=campaign.id, state=RecipientState.PENDING)
            .order_by("id")
            .select_for_update(skip_locked=True)
            .values_list("id", "patient_id")[:limit]
        )
        if not rows:
            return BatchResult(0, 0, 0)
        content = rendering.campaign_content(campaign.content)  # always marketing: the opt-out link is added
        channel = content["channel"]
        values = rendering.values_for(organization, [patient_id for _, patient_id in rows], names=content["variables"])
        outcome: dict = {}  # recipient id → (state, reason, message id)
        messages = []
        for recipient_id, patient_id in rows:
            patient_values = values.get(patient_id)
            if patient_values is None:
                outcome[recipient_id] = (RecipientState.SKIPPED, "PATIENT_NOT_FOUND", None)
                continue
            url = rendering.opt_out_url(
                organization_id=organization.pk, patient_id=patient_id, channel=channel, campaign_id=campaign.id
            )
            try:
                rendered = rendering.render(content, patient_values, unsubscribe_url=url)
            except variables.MissingValue:
                outcome[recipient_id] = (RecipientState.SKIPPED, "VARIABLE_MISSING", None)
                continue
            refused = services.check_rendered(channel, rendered)
            if refused:
                outcome[recipient_id] = (RecipientState.SKIPPED, refused, None)
                continue
            messages.append(services.outbound_message(patient_id, rendered, reference=str(recipient_id)))
        unavailable = False
        if messages:
            results = queue_messages(
                organization=organization,
                connection_id=campaign.connection_id,
                messages=messages,
                purpose="marketing",
                source="campaign",
            )
            for result in results:
                recipient_id = uuid.UUID(result.reference)
                if result.message_id is not None:
                    outcome[recipient_id] = (RecipientState.RELEASED, "", result.message_id)
                elif result.skipped_reason == CONNECTION_UNAVAILABLE:
                    unavailable = True
                    outcome.pop(recipient_id, None)  # stays pending
                else:
                    outcome[recipient_id] = (RecipientState.SKIPPED, result.skipped_reason or "", None)
        _write_back(campaign.id, outcome, now)
        queued = sum(1 for state, _, _ in outcome.values() if state == RecipientState.RELEASED)
        return BatchResult(len(rows), queued, len(outcome) - queued, unavailable)


def _write_back(campaign_id, outcome: dict, now: datetime) -> None:
    if not outcome:
        return
    ids, states, reasons, message_ids = [], [], [], []
    for recipient_id, (state, reason, message_id) in outcome.items():
        ids.append(recipient_id)
        states.append(str(state))
        reasons.append(reason)
        message_ids.append(message_id)
    with db.cursor() as cursor:
        cursor.execute(_WRITE_BACK_SQL, [now, now, ids, states, reasons, message_ids, campaign_id])


def _pause_for_connection(campaign_id) -> None:
    with transaction.atomic():
        campaign = Campaign.objects.unscoped().select_for_update().filter(id=campaign_id).first()
        if campaign is not None and campaign.status == CampaignStatus.SENDING:
            campaign.status, campaign.paused_at = CampaignStatus.PAUSED, timezone.now()
            campaign.pause_reason = PAUSED_FOR_CONNECTION
            campaign.save(update_fields=["status", "paused_at", "pause_reason", "updated_at"])
    logger.warning("campaign %s paused: its channel connection is unavailable", campaign_id)


def _complete_if_done(campaign_id) -> bool:
    with transaction.atomic():
        campaign = Campaign.objects.unscoped().select_for_update().filter(id=campaign_id).first()
        if campaign is None or campaign.status != CampaignStatus.SENDING:
            return False
        pending = CampaignRecipient.objects.for_org(campaign.organization_id).filter(
            campaign_id=campaign_id, state=RecipientState.PENDING
        )
        if pending.exists():
            return False
        campaign.status, campaign.completed_at = CampaignStatus.COMPLETED, timezone.now()
        campaign.save(update_fields=["status", "completed_at", "updated_at"])
        return True


@dataclass(frozen=True)
class RunResult:
    released: int  # recipients whose message was queued
    skipped: int
    more: bool  # work is left and may be released now: the chain continues
    stop: str  # "", "not_sending", "quiet_hours", "window_full", "completed", "connection_unavailable", "nothing_left"


def release_run(campaign_id, *, now: datetime | None = None, seconds: float = RUN_SECONDS) -> RunResult:
    """Release batches of one campaign for up to `seconds`. `now` fixes the pacing clock (tests move it)."""
    started = time.monotonic()
    released = skipped = 0
    while True:
        moment = now or timezone.now()
        reservation = _reserve(campaign_id, moment)
        if not reservation.count:
            if reservation.stop in ("window_full", "quiet_hours") and _complete_if_done(campaign_id):
                return RunResult(released, skipped, False, "completed")  # the last ones filled the window
            return RunResult(released, skipped, False, reservation.stop)
        batch = _release_batch(campaign_id, reservation.count, moment)
        released += batch.queued
        skipped += batch.skipped
        _give_back(campaign_id, reservation.count - batch.queued, moment)
        if batch.connection_unavailable:
            _pause_for_connection(campaign_id)
            return RunResult(released, skipped, False, "connection_unavailable")
        if batch.taken < reservation.count:
            # Nothing (or too little) left to take: done, unless another worker still holds some.
            done = _complete_if_done(campaign_id)
            return RunResult(released, skipped, False, "completed" if done else "nothing_left")
        if time.monotonic() - started >= seconds:
            return RunResult(released, skipped, True, "")


def start_release(campaign_id, chains: int = RELEASE_CHAINS) -> None:
    """Ask workers to release the campaign (after the launching or resuming commit)."""
    from apps.campaigns.tasks import release_campaign

    for _ in range(chains):
        try:
            release_campaign.delay(str(campaign_id))
        except Exception:
            logger.warning("release of campaign %s not requested (broker); left to the sweep", campaign_id)
            return


def sweep(now: datetime | None = None) -> list:
    """Beat: scheduled campaigns whose time has come start sending; sending campaigns whose runs stopped (window
    open again, lost task) get their chains back. Returns the campaigns whose release was requested."""
    now = now or timezone.now()
    with transaction.atomic():
        due = list(
            Campaign.objects.unscoped()
            .select_for_update(skip_locked=True)
            .filter(status=CampaignStatus.SCHEDULED, scheduled_at__lte=now)
            .values_list("id", flat=True)[:100]
        )
        if due:
            Campaign.objects.unscoped().filter(id__in=due).update(
                status=CampaignStatus.SENDING, release_after=None, release_heartbeat_at=now, updated_at=now
            )
        stalled = list(
            Campaign.objects.unscoped()
            .select_for_update(skip_locked=True)
            .filter(status=CampaignStatus.SENDING)
            .filter(Q(release_after__isnull=True) | Q(release_after__lte=now))
            .filter(Q(release_heartbeat_at__isnull=True) | Q(release_heartbeat_at__lt=now - STALE_AFTER))
            .values_list("id", flat=True)[:100]
        )
        if stalled:
            Campaign.objects.unscoped().filter(id__in=stalled).update(release_heartbeat_at=now, updated_at=now)
    started = due + stalled
    for campaign_id in started:
        start_release(campaign_id)
    return started
