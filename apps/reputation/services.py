"""Writes of the reputation area: settings, review sources and their sync, replies, review requests and the
patient's answers on the public page, and private feedback.

Emission rule 2 (spec "Events"): the first import of a source is historical and emits nothing; later syncs are live
and emit `reputation_review.received` (new) / `.updated` (changed) for at most five changes per location per sync:
the five most recent by updateTime, then review id (both descending). The rest are stored silently. Each event's
idempotency key is `review:{id}:{version}`, so a replayed version (same updateTime and content) emits nothing new.
No event carries a review's or feedback's text, or a reviewer's name."""

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from apps.conversations.public import CONNECTION_UNAVAILABLE, Kind, OutboundMessage, connections_of, queue_messages
from apps.core import crypto
from apps.core.errors import ValidationFailed
from apps.core.writes import assign_fields
from apps.events.services import Actor, emit
from apps.patients.public import Patient, PatientMerged
from apps.reputation import provider, tokens
from apps.reputation.errors import (
    NoReviewSource,
    NotInvited,
    ProviderUnavailableError,
    ReplyPending,
    RequestNotSent,
    SourcePaused,
    SourceRefused,
)
from apps.reputation.models import (
    STATUS_ORDER,
    Channel,
    Feedback,
    ReplyStatus,
    ReputationSettings,
    RequestStatus,
    Review,
    ReviewRequest,
    ReviewSource,
    SourceStatus,
)

logger = logging.getLogger("apps.reputation")

LIVE_EVENTS_PER_LOCATION = 5  # spec "Emission rules" 2
REQUEST_VALID = timedelta(days=30)
MAX_REPLY_ATTEMPTS = 5
# A review request is a solicitation to praise the practice in public: we treat it as marketing (PECR / GDPR
# recital 47 reading), so the pipeline requires the channel's marketing consent and honours opt-outs and blocks.
REQUEST_PURPOSE = "marketing"
REQUEST_SOURCE = "reputation"  # the Message.source (16 characters at most)
CHANNEL_KINDS = {Channel.SMS: (Kind.SMS, Kind.TELEPHONY_MESSAGING), Channel.EMAIL: (Kind.EMAIL,)}
SETTINGS_FIELDS = (
    "rating_threshold",
    "question",
    "auto_request_after_appointment",
    "auto_request_delay_minutes",
    "auto_request_channel",
)
SOURCE_FIELDS = ("name", "review_url", "status")


# --- settings -------------------------------------------------------------------------------------------------------


def settings_get(*, organization) -> ReputationSettings:
    found = ReputationSettings.objects.for_org(organization).first()
    if found is not None:
        return found
    ReputationSettings.objects.bulk_create(
        [ReputationSettings(organization_id=getattr(organization, "pk", organization))], ignore_conflicts=True
    )
    return ReputationSettings.objects.for_org(organization).get()


@transaction.atomic
def settings_update(*, organization, data: dict) -> ReputationSettings:
    current = settings_get(organization=organization)
    row = ReputationSettings.objects.for_org(organization).select_for_update().get(id=current.id)
    if assign_fields(row, data, fields=SETTINGS_FIELDS):
        row.save()
    return row


# --- sources --------------------------------------------------------------------------------------------------------


def _store_credentials(source: ReviewSource, credentials: dict) -> None:
    source.credentials_encrypted = crypto.encrypt(json.dumps(credentials, sort_keys=True))
    source.credential_keys = sorted(credentials)


def _credentials(source: ReviewSource) -> dict:
    return json.loads(crypto.decrypt(source.credentials_encrypted))


def _adapter_location(source: ReviewSource) -> provider.Location:
    return provider.Location(
        account_ref=source.account_ref,
        location_ref=source.location_ref,
        access_token=_credentials(source).get("access_token", ""),
    )


@transaction.atomic
def source_create(*, organization, data: dict) -> ReviewSource:
    source = ReviewSource(
        organization=organization,
        location=data["location"],
        provider=data["provider"],
        name=data["name"],
        account_ref=data["account_ref"],
        location_ref=data["location_ref"],
        review_url=data["review_url"],
    )
    _store_credentials(source, data["credentials"])
    duplicate = ReviewSource.objects.for_org(organization).filter(
        provider=source.provider, account_ref=source.account_ref, location_ref=source.location_ref
    )
    if duplicate.exists():
        raise ValidationFailed.for_field("locationRef", "this business profile location is already connected")
    source.save()
    return source


@transaction.atomic
def source_update(*, organization, source: ReviewSource, data: dict) -> ReviewSource:
    source = ReviewSource.objects.for_org(organization).select_for_update().get(id=source.id)
    changed = assign_fields(source, data, fields=SOURCE_FIELDS)
    if data.get("credentials"):
        _store_credentials(source, _credentials(source) | data["credentials"])
        changed = True
    if changed:
        source.save()
    return source


# --- sync: import reviews -------------------------------------------------------------------------------------------


def review_version(item: provider.ProviderReview) -> str:
    """updateTime plus a hash of what the reviewer wrote: the same version is a replay."""
    content = json.dumps([item.rating, item.comment, item.reviewer_name], ensure_ascii=False)
    digest = hashlib.sha256(content.encode()).hexdigest()[:32]
    return f"{item.updated_at.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}:{digest}"


@dataclass(frozen=True)
class SyncResult:
    historical: bool
    received: int
    updated: int
    unchanged: int
    emitted: int


def source_sync(*, source_id) -> SyncResult:
    """Read every review of the source from the platform (outside any transaction), then upsert them in one
    transaction under the source's row lock (two syncs of one source never interleave). Raises
    ProviderUnavailableError / SourceRefused / SourcePaused; the failure is recorded on the source."""
    source = ReviewSource.objects.unscoped().get(id=source_id)
    if source.status != SourceStatus.ACTIVE:
        raise SourcePaused()
    try:
        items = provider.transport().list_reviews(_adapter_location(source))
    except provider.ProviderUnavailable:
        _record_sync_error(source, "PROVIDER_UNAVAILABLE")
        raise ProviderUnavailableError() from None
    except provider.ProviderRefused as refusal:
        _record_sync_error(source, refusal.code)
        raise SourceRefused(refusal.code) from None
    return _store_reviews(source_id, items)


def _record_sync_error(source: ReviewSource, code: str) -> None:
    ReviewSource.objects.unscoped().filter(id=source.id).update(last_sync_error=code[:64], updated_at=timezone.now())


@transaction.atomic
def _store_reviews(source_id, items: list[provider.ProviderReview]) -> SyncResult:
    source = ReviewSource.objects.unscoped().select_for_update().get(id=source_id)
    organization_id = source.organization_id
    historical = source.imported_at is None
    latest: dict[str, provider.ProviderReview] = {}
    for item in items:  # one row per provider review: a review listed twice keeps its latest version
        kept = latest.get(item.review_id)
        if kept is None or item.updated_at >= kept.updated_at:
            latest[item.review_id] = item
    existing = {r.provider_review_id: r for r in Review.objects.for_org(organization_id).filter(source=source)}
    created, updated, changes = [], [], []
    unchanged = 0
    for review_id, item in latest.items():
        version = review_version(item)
        row = existing.get(review_id)
        if row is None:
            row = Review(organization_id=organization_id, source=source, location_id=source.location_id)
            row.provider_review_id = review_id
            _apply(row, item, version)
            created.append(row)
            changes.append(("reputation_review.received", row))
        elif row.version != version:
            _apply(row, item, version)
            updated.append(row)
            changes.append(("reputation_review.updated", row))
        else:
            if _apply_reply(row, item):
                updated.append(row)
            unchanged += 1
    rows = Review.objects.for_org(organization_id)
    rows.bulk_create(created, batch_size=500)
    if updated:
        stamp = timezone.now()
        for row in updated:
            row.updated_at = stamp  # bulk_update does not run auto_now
        rows.bulk_update(
            updated,
            ["reviewer_name", "rating", "comment", "review_created_at", "review_updated_at", "version",
             "reply_comment", "reply_updated_at", "updated_at"],
            batch_size=500,
        )  # fmt: skip
    emitted = 0
    if not historical:
        changes.sort(key=lambda change: (change[1].review_updated_at, change[1].provider_review_id), reverse=True)
        for event_type, row in changes[:LIVE_EVENTS_PER_LOCATION]:
            emit(
                organization=organization_id,
                type=event_type,
                subject_type="reputation_review",
                subject_id=row.id,
                actor=Actor("provider", source.provider),
                data={
                    "reviewId": str(row.id),
                    "sourceId": str(source.id),
                    "locationId": str(source.location_id),
                    "provider": source.provider,
                    "rating": row.rating,
                },
                idempotency_key=f"review:{row.id}:{row.version}",
            )
            emitted += 1
    now = timezone.now()
    source.imported_at = source.imported_at or now
    source.last_synced_at = now
    source.last_sync_error = ""
    source.save(update_fields=["imported_at", "last_synced_at", "last_sync_error", "updated_at"])
    return SyncResult(historical, len(created), sum(1 for t, _ in changes if t.endswith("updated")), unchanged, emitted)


def _apply(row: Review, item: provider.ProviderReview, version: str) -> None:
    row.reviewer_name = item.reviewer_name
    row.rating = item.rating
    row.comment = item.comment
    row.review_created_at = item.created_at
    row.review_updated_at = item.updated_at
    row.version = version
    _apply_reply(row, item)


def _apply_reply(row: Review, item: provider.ProviderReview) -> bool:
    """The platform's reply, unless ours is on its way. True when it changed."""
    if row.reply_status == ReplyStatus.PENDING:
        return False
    if (row.reply_comment, row.reply_updated_at) == (item.reply_comment, item.reply_updated_at):
        return False
    row.reply_comment, row.reply_updated_at = item.reply_comment, item.reply_updated_at
    return True


def sources_due() -> list:
    """The sources the beat sync takes (every active one, every practice)."""
    return list(ReviewSource.objects.unscoped().filter(status=SourceStatus.ACTIVE).values_list("id", flat=True))


# --- replies --------------------------------------------------------------------------------------------------------


def _emit_reply(review: Review, previous: str, actor: Actor) -> None:
    emit(
        organization=review.organization_id,
        type="reputation_reply.status_changed",
        subject_type="reputation_review",
        subject_id=review.id,
        actor=actor,
        data={
            "reviewId": str(review.id),
            "sourceId": str(review.source_id),
            "locationId": str(review.location_id),
            "status": review.reply_status,
            "previousStatus": previous,
        },
    )


@transaction.atomic
def reply_create(*, organization, review: Review, comment: str, user) -> Review:
    """Store the reply as pending and queue its publication (after the commit). A reply still pending is 409."""
    review = Review.objects.for_org(organization).select_for_update().get(id=review.id)
    if review.reply_status == ReplyStatus.PENDING:
        raise ReplyPending()
    previous = review.reply_status
    review.reply_comment = comment
    review.reply_status = ReplyStatus.PENDING
    review.reply_error = ""
    review.reply_attempts = 0
    review.save(update_fields=["reply_comment", "reply_status", "reply_error", "reply_attempts", "updated_at"])
    _emit_reply(review, previous, Actor.user(user))
    review_id = str(review.id)
    transaction.on_commit(lambda: _queue_publish(review_id))
    return review


def _queue_publish(review_id: str, countdown: int = 0) -> None:
    from apps.reputation.tasks import publish_reply

    try:
        publish_reply.apply_async((review_id,), countdown=countdown)
    except Exception as exc:  # the broker is down: the beat sweep publishes it later
        logger.warning("reply publication not queued (%s)", type(exc).__name__)


RETRY = "retry"


def reply_publish(*, review_id) -> str:
    """Publish a pending reply through the adapter: published or failed (event each), or RETRY (5xx, 429,
    timeouts; the attempt is counted, and the fifth unavailable attempt fails the reply). Idempotent: a reply no
    longer pending is left alone."""
    review = Review.objects.unscoped().select_related("source").filter(id=review_id).first()
    if review is None or review.reply_status != ReplyStatus.PENDING:
        return review.reply_status if review else "gone"
    comment = review.reply_comment
    try:
        published = provider.transport().publish_reply(
            _adapter_location(review.source), review.provider_review_id, comment
        )
    except provider.ProviderUnavailable:
        return _reply_unavailable(review.id)
    except provider.ProviderRefused as refusal:
        return _reply_finish(review.id, comment, ReplyStatus.FAILED, error=refusal.code)
    return _reply_finish(review.id, comment, ReplyStatus.PUBLISHED, updated_at=published.updated_at)


@transaction.atomic
def _reply_unavailable(review_id) -> str:
    review = Review.objects.unscoped().select_for_update().get(id=review_id)
    if review.reply_status != ReplyStatus.PENDING:
        return review.reply_status
    review.reply_attempts += 1
    if review.reply_attempts < MAX_REPLY_ATTEMPTS:
        review.save(update_fields=["reply_attempts", "updated_at"])
        return RETRY
    review.reply_status, review.reply_error = ReplyStatus.FAILED, "PROVIDER_UNAVAILABLE"
    review.save(update_fields=["reply_attempts", "reply_status", "reply_error", "updated_at"])
    _emit_reply(review, ReplyStatus.PENDING, Actor.system("reputation"))
    return review.reply_status


@transaction.atomic
def _reply_finish(review_id, comment: str, status: str, *, error: str = "", updated_at=None) -> str:
    review = Review.objects.unscoped().select_for_update().get(id=review_id)
    if review.reply_status != ReplyStatus.PENDING or review.reply_comment != comment:
        return review.reply_status  # a newer reply replaced this one meanwhile: its own task publishes it
    review.reply_status, review.reply_error = status, error[:64]
    review.reply_attempts += 1
    fields = ["reply_status", "reply_error", "reply_attempts", "updated_at"]
    if updated_at is not None:
        review.reply_updated_at = updated_at
        fields.append("reply_updated_at")
    review.save(update_fields=fields)
    _emit_reply(review, ReplyStatus.PENDING, Actor("provider", review.source.provider))
    return status


def replies_due() -> list:
    """Pending replies whose task was lost (no change for ten minutes): the beat sweep queues them again."""
    stale = timezone.now() - timedelta(minutes=10)
    return list(
        Review.objects.unscoped()
        .filter(reply_status=ReplyStatus.PENDING, updated_at__lt=stale)
        .values_list("id", flat=True)[:500]
    )


# --- review requests ------------------------------------------------------------------------------------------------


def request_url(token: str) -> str:
    return f"{django_settings.SVC_BASE_URL}/r/{token}"


def _connection_id(organization, channel: str):
    for kind in CHANNEL_KINDS[channel]:
        connection = connections_of(organization=organization, kind=kind).exclude(status="disconnected").first()
        if connection is not None:
            return connection.id
    return None


def _message(organization, patient, channel: str, url: str) -> OutboundMessage:
    practice = organization.name
    greeting = f"Hi {patient.first_name}, " if (patient.first_name or "").strip() else ""
    if channel == Channel.SMS:
        body = f"{greeting}thank you for visiting {practice}. How did we do? {url} Reply STOP to opt out."
        return OutboundMessage(patient_id=patient.id, body=body, reference="reputation_request")
    body = (
        f"{greeting.strip() or 'Hello,'}\n\nThank you for visiting {practice}. How did we do? It takes a few "
        f"seconds:\n\n{url}\n\nThis link works for 30 days."
    )
    return OutboundMessage(
        patient_id=patient.id, body=body, subject=f"How was your visit to {practice}?", reference="reputation_request"
    )


def active_source(*, organization, location_id) -> ReviewSource | None:
    return (
        ReviewSource.objects.for_org(organization)
        .filter(location_id=location_id, status=SourceStatus.ACTIVE)
        .order_by("created_at", "id")
        .first()
    )


@dataclass(frozen=True)
class SentRequest:
    request: ReviewRequest
    token: str


@transaction.atomic
def request_create(*, organization, user, patient: Patient, location, channel: str, appointment=None) -> SentRequest:
    """Send the patient a link to /r/{token} through the conversations pipeline (purpose marketing). A message the
    pipeline skips (no consent, opted out, blocked, no address, no connection) is 409 REVIEW_REQUEST_NOT_SENT with
    the reason, and nothing is stored."""
    if patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)
    if appointment is not None and appointment.patient_id != patient.id:
        raise ValidationFailed.for_field("appointmentId", "is not an appointment of this patient")
    if active_source(organization=organization, location_id=location.id) is None:
        raise NoReviewSource()
    token = tokens.new_token()
    connection_id = _connection_id(organization, channel)
    if connection_id is None:
        raise RequestNotSent(CONNECTION_UNAVAILABLE)
    (result,) = queue_messages(
        organization=organization,
        connection_id=connection_id,
        messages=[_message(organization, patient, channel, request_url(token))],
        purpose=REQUEST_PURPOSE,
        source=REQUEST_SOURCE,
        user=user if getattr(user, "is_authenticated", False) else None,
    )
    if result.message_id is None:
        raise RequestNotSent(result.skipped_reason)
    request = ReviewRequest.objects.create(
        organization=organization,
        patient=patient,
        appointment=appointment,
        location=location,
        channel=channel,
        token_hash=tokens.digest(token),
        message_id=result.message_id,
        expires_at=timezone.now() + REQUEST_VALID,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    return SentRequest(request, token)


def request_for_token(token: str) -> ReviewRequest | None:
    """The live request a token opens: unknown, tampered, expired and erased ones are None."""
    digest = tokens.digest(token)
    if digest is None:
        return None
    return (
        ReviewRequest.objects.unscoped()
        .select_related("organization", "location", "patient")
        .filter(token_hash=digest, expires_at__gt=timezone.now())
        .first()
    )


def _advance(request: ReviewRequest, status: str, **fields) -> bool:
    """Move the request forward to `status` (never back); emits reputation_request.status_changed when it moved."""
    earlier = [s for s, order in STATUS_ORDER.items() if order < STATUS_ORDER[status]]
    now = timezone.now()
    moved = (
        ReviewRequest.objects.for_org(request.organization_id)
        .filter(id=request.id, status__in=earlier)
        .update(status=status, updated_at=now, **{f"{status}_at": now}, **fields)
    )
    if not moved:
        return False
    previous = request.status
    request.status = status
    for name, value in fields.items():
        setattr(request, name, value)
    emit(
        organization=request.organization_id,
        type="reputation_request.status_changed",
        subject_type="reputation_request",
        subject_id=request.id,
        actor=Actor("patient", str(request.patient_id)),
        data={
            "requestId": str(request.id),
            "patientId": str(request.patient_id),
            "locationId": str(request.location_id),
            "status": status,
            "previousStatus": previous,
        },
    )
    return True


@transaction.atomic
def request_open(request: ReviewRequest) -> ReviewRequest:
    _advance(request, RequestStatus.OPENED)
    return request


@dataclass(frozen=True)
class RatingOutcome:
    invited: bool  # pointed at the public review site
    review_url: str
    rating: int


def _outcome(request: ReviewRequest, threshold: int) -> RatingOutcome:
    source = active_source(organization=request.organization_id, location_id=request.location_id)
    invited = request.rating is not None and request.rating >= threshold and source is not None
    return RatingOutcome(invited=invited, review_url=source.review_url if invited else "", rating=request.rating)


def request_outcome(request: ReviewRequest) -> RatingOutcome:
    """Where an answered request stands (the page shown again)."""
    return _outcome(request, settings_get(organization=request.organization_id).rating_threshold)


@transaction.atomic
def request_rate(request: ReviewRequest, *, rating: int, comment: str = "") -> RatingOutcome:
    """The patient's rating. At or above the practice's threshold: the answer points at the source's public review
    page. Below: the comment is kept as private feedback (reputation_feedback.received, without its text). Rating
    again changes nothing: the first answer stands and is returned."""
    request = ReviewRequest.objects.for_org(request.organization_id).select_for_update().get(id=request.id)
    threshold = settings_get(organization=request.organization_id).rating_threshold
    if request.rating is not None:
        return _outcome(request, threshold)
    _advance(request, RequestStatus.RATED, rating=rating)
    if rating < threshold:
        feedback = Feedback.objects.create(
            organization_id=request.organization_id,
            request=request,
            patient_id=request.patient_id,
            location_id=request.location_id,
            rating=rating,
            comment=comment,
        )
        emit(
            organization=request.organization_id,
            type="reputation_feedback.received",
            subject_type="reputation_feedback",
            subject_id=feedback.id,
            actor=Actor("patient", str(request.patient_id)),
            data={
                "feedbackId": str(feedback.id),
                "requestId": str(request.id),
                "patientId": str(request.patient_id),
                "locationId": str(request.location_id),
                "rating": rating,
            },
        )
    return _outcome(request, threshold)


@transaction.atomic
def request_reviewed(request: ReviewRequest) -> RatingOutcome:
    """The patient went on to the public review site (only after a rating that pointed them there)."""
    request = ReviewRequest.objects.for_org(request.organization_id).select_for_update().get(id=request.id)
    outcome = _outcome(request, settings_get(organization=request.organization_id).rating_threshold)
    if request.status == RequestStatus.REVIEWED:
        return outcome
    if request.status != RequestStatus.RATED or not outcome.invited:
        raise NotInvited()
    _advance(request, RequestStatus.REVIEWED)
    return outcome
