"""The shared intake (spec inbound rule 7) and the lead caps (rule 3).

Receiving (in the request, after the body cap and the signature): the body is saved as one LeadIntake row — raw
bytes encrypted, content digest unique per platform (an identical retry stores nothing and is acknowledged), the
count of deliveries (at most 100) and the pages or advertisers it names — in one INSERT, durable before the 2xx. A
worker is asked to process it after the commit; the sweep picks up what a lost message left.

Processing (Celery, `tasks.process_intake`): each run is one attempt, at most three within 24 hours of the first;
attempt n waits RETRY_DELAYS[n-1] before the next. A run routes each delivery to the connection of this region that
owns its page, ad account or advertiser; deliveries for none of them: the whole body goes to the peer region when
none of it is ours (apps.leadads.peer) or, with no peer (or a body a peer already forwarded here), is parked for
operator review (rule 4). Routed deliveries become submissions (apps.leadads.services), fetching the social
platform's answers with the page token. A lead that could not be read for a reason worth retrying (the platform
unavailable, the page token refused) keeps the body waiting for its next attempt; after the third the body is
failed and its waiting submissions fail with it (reason attempts_exhausted)."""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from apps.core import crypto
from apps.events.services import Actor
from apps.leadads import graph, peer, services
from apps.leadads.models import (
    Health,
    LeadAdConnection,
    LeadAdSubmission,
    LeadIntake,
    Platform,
)
from apps.leadads.platforms import Body, Delivery, Malformed, parse

logger = logging.getLogger("apps.leadads")

MAX_ATTEMPTS = 3
ATTEMPT_WINDOW = timedelta(hours=24)
RETRY_DELAYS = (timedelta(minutes=1), timedelta(minutes=10))
TOKEN_REFUSED = "the platform refused the page token"
CHUNK = 20  # leads made in one transaction (each in its own savepoint): one commit, one outbox notice per chunk
RAW_KEPT = timedelta(days=7)  # the raw body of a settled intake is erased after this
ROWS_KEPT = timedelta(days=30)  # settled intake rows (their digests stop identical retries) are deleted after this


@dataclass(frozen=True)
class Received:
    intake: LeadIntake | None
    duplicate: bool
    deliveries: int


def receive(
    *, platform: str, raw: bytes, signature: str, body: Body, connection=None, forwarded_from: str = ""
) -> Received:
    """Save a verified body (see the module docstring). A body naming no lead stores nothing. DatabaseError
    propagates: the view answers 503 and the platform sends the body again."""
    if not body.deliveries:
        return Received(None, duplicate=False, deliveries=0)
    intake = LeadIntake(
        platform=platform,
        content_digest=crypto_digest(raw),
        raw_encrypted=crypto.encrypt(raw.decode("utf-8")),
        signature=(signature or "")[:512],
        deliveries=len(body.deliveries),
        routing_keys=body.routing_keys,
        connection=connection,
        forwarded_from=forwarded_from[:8],
    )
    try:
        with transaction.atomic():
            intake.save(force_insert=True)
    except IntegrityError:
        existing = LeadIntake.objects.filter(platform=platform, content_digest=intake.content_digest).first()
        return Received(existing, duplicate=True, deliveries=len(body.deliveries))
    transaction.on_commit(lambda: queue(intake.id))
    return Received(intake, duplicate=False, deliveries=len(body.deliveries))


def crypto_digest(raw: bytes) -> str:
    import hashlib

    return hashlib.sha256(raw).hexdigest()


def queue(intake_id) -> None:
    from apps.leadads.tasks import process_intake

    try:
        process_intake.delay(str(intake_id))
    except Exception:  # stored is stored: the sweep processes it
        logger.warning("lead intake %s not queued; left to the sweep", intake_id)


# --- processing -----------------------------------------------------------------------------------------------------


def _claim(intake_id) -> tuple[LeadIntake | None, bool]:
    """(intake, exhausted): the waiting intake with one more attempt counted, or exhausted when it has had its three
    attempts or its 24 hours. (None, False) when it is not waiting (settled, or another worker holds it)."""
    now = timezone.now()
    with transaction.atomic():
        intake = (
            LeadIntake.objects.select_for_update(skip_locked=True)
            .filter(id=intake_id, status=LeadIntake.Status.RECEIVED)
            .first()
        )
        if intake is None:
            return None, False
        if intake.attempts >= MAX_ATTEMPTS or (
            intake.first_attempt_at is not None and now - intake.first_attempt_at > ATTEMPT_WINDOW
        ):
            return intake, True
        intake.attempts += 1
        intake.first_attempt_at = intake.first_attempt_at or now
        delay = RETRY_DELAYS[min(intake.attempts - 1, len(RETRY_DELAYS) - 1)]
        intake.next_attempt_at = now + delay
        intake.save(update_fields=["attempts", "first_attempt_at", "next_attempt_at", "updated_at"])
    return intake, False


def _settle(intake: LeadIntake, status: str, *, error: str = "", unrouted: list[str] | None = None) -> None:
    fields = {"status": status, "settled_at": timezone.now(), "next_attempt_at": None, "last_error": error[:200]}
    if unrouted is not None:
        fields["unrouted_keys"] = unrouted
    LeadIntake.objects.filter(id=intake.id).update(updated_at=timezone.now(), **fields)


def _fail_waiting(intake: LeadIntake, reason: str) -> int:
    failed = 0
    for submission_id, organization_id in (
        LeadAdSubmission.objects.unscoped()
        .filter(intake_id=intake.id, status=LeadAdSubmission.Status.RECEIVED)
        .values_list("id", "organization_id")
    ):
        failed += services.submission_fail(submission_id=submission_id, organization_id=organization_id, reason=reason)
    return failed


def _exhaust(intake: LeadIntake, error: str) -> str:
    """No attempt left: the body is failed, and so are its submissions still waiting."""
    _settle(intake, LeadIntake.Status.FAILED, error=error or "attempts exhausted")
    _fail_waiting(intake, "attempts_exhausted")
    return LeadIntake.Status.FAILED


def _routes(intake: LeadIntake, body: Body) -> dict[str, LeadAdConnection]:
    """Routing key → this region's connected connection that owns it."""
    if intake.platform == Platform.SEARCH_ADS:
        connection = (
            LeadAdConnection.objects.unscoped()
            .filter(id=intake.connection_id)
            .exclude(health=Health.DISCONNECTED)
            .first()
        )
        return {"": connection} if connection is not None else {}
    rows = (
        LeadAdConnection.objects.unscoped()
        .filter(platform=intake.platform, external_id__in=body.routing_keys)
        .exclude(health=Health.DISCONNECTED)
    )
    return {row.external_id: row for row in rows}


def process(*, intake_id) -> str:
    """One processing attempt of an intake (see the module docstring). Returns the intake's status afterwards, or
    "" when it was not waiting."""
    intake, exhausted = _claim(intake_id)
    if intake is None:
        return ""
    if exhausted:
        return _exhaust(intake, intake.last_error)
    last_attempt = intake.attempts >= MAX_ATTEMPTS
    try:
        raw = crypto.decrypt(intake.raw_encrypted).encode("utf-8")
        body = parse(intake.platform, raw)
    except (ValueError, Malformed) as exc:  # verified and parsed once already: ours to look at, not to retry
        logger.error("lead intake %s cannot be read again (%s)", intake.id, type(exc).__name__)
        return _exhaust(intake, "body cannot be read")
    routes = _routes(intake, body)
    routed = [(routes[d.routing_key], d) for d in body.deliveries if d.routing_key in routes]
    unrouted = sorted({d.routing_key or "(routing token)" for d in body.deliveries if d.routing_key not in routes})
    if not routed:
        return _elsewhere(intake, raw, unrouted, last_attempt=last_attempt)
    retry_reason = ""
    for start in range(0, len(routed), CHUNK):
        outcome = _deliver(intake, routed[start : start + CHUNK])
        retry_reason = retry_reason or outcome
    if retry_reason:
        LeadIntake.objects.filter(id=intake.id).update(last_error=retry_reason[:200], unrouted_keys=unrouted)
        if last_attempt:
            return _exhaust(intake, retry_reason)
        return LeadIntake.Status.RECEIVED
    _settle(intake, LeadIntake.Status.PROCESSED, unrouted=unrouted)
    return LeadIntake.Status.PROCESSED


def _elsewhere(intake: LeadIntake, raw: bytes, unrouted: list[str], *, last_attempt: bool) -> str:
    """None of the body is this region's: to the peer region, or parked for review."""
    if intake.forwarded_from or not peer.configured() or not peer.forwardable(intake.platform):
        logger.info("lead intake %s parked for review: %d page(s) not connected here", intake.id, len(unrouted))
        _settle(intake, LeadIntake.Status.PARKED, error="not connected in this region", unrouted=unrouted)
        return LeadIntake.Status.PARKED
    try:
        peer.forward(platform=intake.platform, raw=raw, signature=intake.signature)
    except peer.ForwardFailed as failure:
        if last_attempt:  # never dropped: an operator decides
            _settle(intake, LeadIntake.Status.PARKED, error=f"peer region refused: {failure}", unrouted=unrouted)
            return LeadIntake.Status.PARKED
        LeadIntake.objects.filter(id=intake.id).update(last_error=f"peer region: {failure}"[:200])
        return LeadIntake.Status.RECEIVED
    _settle(intake, LeadIntake.Status.FORWARDED, unrouted=unrouted)
    return LeadIntake.Status.FORWARDED


def _fetch(connection: LeadAdConnection, submission: LeadAdSubmission) -> tuple[str, graph.FetchedLead | None]:
    """The social platform's answers for a lead, fetched with the page token (no transaction is open: a network
    call). ("", lead) when read; (reason, None) when the lead must wait for the body's next attempt; ("failed",
    None) when the platform cannot give it (the submission was failed)."""
    try:
        token = crypto.decrypt(connection.page_token_encrypted) if connection.page_token_encrypted else ""
    except ValueError:
        token = ""
    actor = Actor("provider", connection.platform)
    try:
        if not token:
            raise graph.TokenRefused()
        fetched = graph.transport().fetch_lead(submission.lead_ref, token)
    except graph.Unavailable:
        return "the lead API is unavailable", None
    except graph.TokenRefused:
        reason = TOKEN_REFUSED
        services.connection_set_health(connection_id=connection.id, health=Health.FAILING, reason=reason, actor=actor)
        connection.health = Health.FAILING
        return reason, None
    except (graph.LeadNotFound, graph.Refused) as refusal:
        code = "lead_not_found" if isinstance(refusal, graph.LeadNotFound) else "lead_unreadable"
        if isinstance(refusal, graph.Refused):
            logger.warning("lead API refused a lead (%s)", refusal.code)
        services.submission_fail(submission_id=submission.id, organization_id=connection.organization_id, reason=code)
        return "failed", None
    if connection.health == Health.FAILING:
        services.connection_set_health(connection_id=connection.id, health=Health.HEALTHY, reason="", actor=actor)
        connection.health = Health.HEALTHY
    return "", fetched


def _deliver(intake: LeadIntake, routed: list[tuple[LeadAdConnection, Delivery]]) -> str:
    """A chunk of routed deliveries into their submissions' outcomes: the submissions recorded in one transaction,
    the social platform's answers fetched outside any, then the leads made in one more transaction (each in its own
    savepoint, so one lead's failure keeps the others). Returns "" when all settled, else why some must wait for the
    body's next attempt."""
    by_connection: dict = {}
    for connection, delivery in routed:
        by_connection.setdefault(connection.id, (connection, []))[1].append(delivery)
    ready: list[tuple[LeadAdConnection, LeadAdSubmission, dict | None, dict | None]] = []
    seen: set = set()
    refused: set = set()
    retry_reason = ""
    for connection, deliveries in by_connection.values():
        found = services.submissions_ensure(connection=connection, deliveries=deliveries, intake_id=intake.id)
        for delivery in deliveries:
            submission = found[delivery.lead_ref]
            if submission.status != LeadAdSubmission.Status.RECEIVED or submission.id in seen:
                continue  # seen before and settled (a duplicate), or twice in this body
            seen.add(submission.id)
            if delivery.fields is not None:
                ready.append((connection, submission, None, None))
                continue
            if connection.id in refused:  # the page token was refused moments ago: the rest waits too
                continue
            reason, fetched = _fetch(connection, submission)
            if reason == TOKEN_REFUSED:
                refused.add(connection.id)
            if fetched is not None:
                refs = {"campaign_ref": fetched.campaign_ref, "form_ref": fetched.form_ref, "ad_ref": fetched.ad_ref}
                ready.append((connection, submission, fetched.fields, refs))
            elif reason != "failed":
                retry_reason = retry_reason or reason
    if not ready:
        return retry_reason
    try:
        with transaction.atomic():
            for connection, submission, fields, refs in ready:
                try:
                    organization_id = connection.organization_id
                    services.submission_map(
                        submission_id=submission.id, organization_id=organization_id, fields=fields, refs=refs
                    )
                except DatabaseError:
                    logger.exception("lead-ad submission %s not mapped; retried with the body", submission.id)
                    retry_reason = retry_reason or "a lead could not be stored"
            LeadAdConnection.objects.unscoped().filter(id__in={c.id for c, _, _, _ in ready}).update(
                last_lead_at=timezone.now()
            )
    except DatabaseError:
        logger.exception("lead intake %s: a chunk of leads not stored; retried with the body", intake.id)
        return "the leads could not be stored"
    return retry_reason


# --- sweeps ---------------------------------------------------------------------------------------------------------


def due(*, limit: int = 200) -> list:
    """Waiting intakes whose next attempt is due, or whose first was never run (a lost queue message)."""
    now = timezone.now()
    waiting = LeadIntake.objects.filter(status=LeadIntake.Status.RECEIVED)
    first = waiting.filter(next_attempt_at__isnull=True, created_at__lte=now - timedelta(seconds=30))
    again = waiting.filter(next_attempt_at__lte=now)
    return list((first | again).order_by("created_at").values_list("id", flat=True)[:limit])


def purge() -> tuple[int, int]:
    """Raw bodies of settled intakes after a week; settled rows after 30 days."""
    now = timezone.now()
    erased = (
        LeadIntake.objects.exclude(status=LeadIntake.Status.RECEIVED)
        .filter(settled_at__lte=now - RAW_KEPT, erased_at__isnull=True)
        .update(raw_encrypted="", erased_at=now)
    )
    deleted, _ = (
        LeadIntake.objects.exclude(status__in=(LeadIntake.Status.RECEIVED, LeadIntake.Status.PARKED))
        .filter(settled_at__lte=now - ROWS_KEPT)
        .delete()
    )
    return erased, deleted


def replay(*, intake_id) -> bool:
    """Operator action (admin): a parked or failed body gets three fresh attempts (its page was connected since)."""
    changed = (
        LeadIntake.objects.filter(id=intake_id, erased_at__isnull=True)
        .exclude(status=LeadIntake.Status.RECEIVED)
        .exclude(status=LeadIntake.Status.FORWARDED)
        .update(
            status=LeadIntake.Status.RECEIVED,
            attempts=0,
            first_attempt_at=None,
            next_attempt_at=None,
            settled_at=None,
            updated_at=timezone.now(),
        )
    )
    if changed:
        transaction.on_commit(lambda: queue(intake_id))
    return bool(changed)
