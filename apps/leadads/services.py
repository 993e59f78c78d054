"""Writes of native lead ads: connections (settings), the lead-ad submissions made from routed deliveries (their
mapping into patients and journeys through the capture area's lead rules, and the needs_review resolution), and
the leads integrators push through POST /leads. The intake (receiving, routing, forwarding, attempts) is in
apps.leadads.intake; deauthorization and data deletion in apps.leadads.deletion.

Events (spec emission rule 3): lead_ad_submission.received once per submission when it is first recorded, and
lead_ad_submission.status_changed only for the meaningful outcomes processed, failed and needs_review — never for
received, processing or a retry. Each carries an idempotency key (the submission and the outcome), so replaying the
same outcome answers the same logical event and creates no new delivery. lead_ad_connection.health_changed on each
real change of a connection's health. No lead answers, tokens or raw bodies in any event."""

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db import connection as db_connection
from django.utils import timezone

from apps.capture.public import interpret, lead_record
from apps.core import crypto
from apps.core.errors import ValidationFailed
from apps.core.writes import assign_fields
from apps.events.services import Actor, emit
from apps.leadads import signatures
from apps.leadads.errors import (
    ConnectionDisconnected,
    ExternalIdAlreadyConnected,
    ExternalIdConflict,
    SubmissionNotInReview,
)
from apps.leadads.models import (
    Health,
    LeadAdConnection,
    LeadAdSubmission,
    Platform,
    PushedLead,
)
from apps.leadads.platforms import Delivery
from apps.patients.public import lead_source_named

ROUTING_TOKEN_PREFIX = "lat_"
GOOGLE_KEY_PREFIX = "lgk_"
LEAD_SOURCE_NAMES = {
    Platform.META_PLATFORM: "Social lead ads",
    Platform.SEARCH_ADS: "Search lead ads",
    Platform.SHORT_VIDEO: "Short-video lead ads",
}
CALLBACK_PATHS = {
    Platform.META_PLATFORM: "/webhooks/lead-ads/meta-platform",
    Platform.SEARCH_ADS: "/webhooks/lead-ads/search-ads/{token}",
    Platform.SHORT_VIDEO: "/webhooks/lead-ads/short-video",
}
CONNECTION_FIELDS = ("name", "lead_source", "default_treatment", "location")
RELATIONS = {"lead_source": "lead_source", "default_treatment": "default_treatment", "location": "location"}


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def callback_url(platform: str, routing_token: str | None = None) -> str | None:
    path = CALLBACK_PATHS[platform]
    if "{token}" in path:
        if routing_token is None:
            return None
        path = path.format(token=routing_token)
    return settings.SVC_BASE_URL + path


# --- connections ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Secrets:
    """What a create or a regeneration shows once: the routing token (and so the search-ads URL) and the key."""

    routing_token: str | None = None
    google_key: str | None = None


def _health_event(connection: LeadAdConnection, previous: str, actor: Actor) -> None:
    emit(
        organization=connection.organization_id,
        type="lead_ad_connection.health_changed",
        subject_type="lead_ad_connection",
        subject_id=connection.id,
        actor=actor,
        data={
            "platform": connection.platform,
            "health": connection.health,
            "previousHealth": previous,
            "reason": connection.health_reason[:200],
        },
    )


def connection_set_health(*, connection_id, health: str, reason: str, actor: Actor) -> bool:
    """Move a connection's health (conditional: only a real change, and never out of disconnected this way); emits
    lead_ad_connection.health_changed. True when it changed."""
    with transaction.atomic():
        connection = (
            LeadAdConnection.objects.unscoped()
            .select_for_update()
            .filter(id=connection_id)
            .exclude(health=Health.DISCONNECTED)
            .exclude(health=health)
            .first()
        )
        if connection is None:
            return False
        previous = connection.health
        connection.health, connection.health_reason = health, reason[:200]
        connection.health_changed_at = timezone.now()
        connection.save(update_fields=["health", "health_reason", "health_changed_at", "updated_at"])
        _health_event(connection, previous, actor)
    return True


@transaction.atomic
def connection_create(*, organization, user, data: dict[str, Any]) -> tuple[LeadAdConnection, Secrets]:
    platform = data["platform"]
    routing_token = ROUTING_TOKEN_PREFIX + secrets.token_urlsafe(32)
    google_key = GOOGLE_KEY_PREFIX + secrets.token_urlsafe(24) if platform == Platform.SEARCH_ADS else None
    connection = LeadAdConnection(
        organization=organization,
        platform=platform,
        external_id=data["external_id"],
        routing_token_digest=token_digest(routing_token),
        google_key_digest=signatures.key_digest(google_key) if google_key else "",
        page_token_encrypted=crypto.encrypt(data["page_access_token"]) if data.get("page_access_token") else "",
        authorized_by_ref=data.get("authorized_user_id") or "",
        health_changed_at=timezone.now(),
        created_by=user,
    )
    assign_fields(connection, data, fields=CONNECTION_FIELDS, relations=RELATIONS)
    if connection.lead_source is None:
        with db_connection.cursor() as cursor:  # two first connections at once make one lead source, not two
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"leadads:{organization.pk}"])
        connection.lead_source = lead_source_named(organization, LEAD_SOURCE_NAMES[platform])
    try:
        with transaction.atomic():
            connection.save(force_insert=True)
    except IntegrityError:
        raise ExternalIdAlreadyConnected() from None
    return connection, Secrets(routing_token=routing_token, google_key=google_key)


@transaction.atomic
def connection_update(
    *,
    organization,
    user,
    connection: LeadAdConnection,
    data: dict[str, Any],
    regenerate_routing_token: bool = False,
    regenerate_google_key: bool = False,
) -> tuple[LeadAdConnection, Secrets]:
    """Any subset of name, lead source, default treatment, location; a new page token (social: a failing connection
    turns healthy again); a new routing token or google_key, shown once (the old one stops at once)."""
    connection = LeadAdConnection.objects.for_org(organization).select_for_update().get(id=connection.id)
    if connection.health == Health.DISCONNECTED:
        raise ConnectionDisconnected()
    assign_fields(connection, data, fields=CONNECTION_FIELDS, relations=RELATIONS)
    shown = Secrets()
    if regenerate_routing_token:
        token = ROUTING_TOKEN_PREFIX + secrets.token_urlsafe(32)
        connection.routing_token_digest = token_digest(token)
        shown = Secrets(routing_token=token)
    if regenerate_google_key and connection.platform == Platform.SEARCH_ADS:
        key = GOOGLE_KEY_PREFIX + secrets.token_urlsafe(24)
        connection.google_key_digest = signatures.key_digest(key)
        shown = Secrets(routing_token=shown.routing_token, google_key=key)
    if data.get("page_access_token"):
        connection.page_token_encrypted = crypto.encrypt(data["page_access_token"])
    if "authorized_user_id" in data:
        connection.authorized_by_ref = data["authorized_user_id"] or ""
    previous = connection.health
    if data.get("page_access_token") and previous == Health.FAILING:
        connection.health, connection.health_reason = Health.HEALTHY, ""
        connection.health_changed_at = timezone.now()
    connection.save()
    if connection.health != previous:
        _health_event(connection, previous, Actor.user(user))
    return connection, shown


def disconnect(connection: LeadAdConnection, *, actor: Actor, reason: str) -> bool:
    """Disconnected (inside the caller's transaction, the row locked by the caller): credentials wiped, nothing routes
    to it any more; its submissions stay. False when it already was."""
    if connection.health == Health.DISCONNECTED:
        return False
    previous = connection.health
    now = timezone.now()
    connection.health, connection.health_reason, connection.health_changed_at = Health.DISCONNECTED, reason, now
    connection.disconnected_at = now
    connection.page_token_encrypted, connection.google_key_digest = "", ""
    connection.save()
    _health_event(connection, previous, actor)
    return True


@transaction.atomic
def connection_disconnect(*, organization, user, connection: LeadAdConnection) -> LeadAdConnection:
    connection = LeadAdConnection.objects.for_org(organization).select_for_update().get(id=connection.id)
    disconnect(connection, actor=Actor.user(user), reason="disconnected by the practice")
    return connection


# --- submissions ----------------------------------------------------------------------------------------------------

MEANINGFUL = (LeadAdSubmission.Status.PROCESSED, LeadAdSubmission.Status.FAILED, LeadAdSubmission.Status.NEEDS_REVIEW)


def _submission_data(submission: LeadAdSubmission) -> dict:
    return {
        "platform": submission.platform,
        "connectionId": str(submission.connection_id),
        "status": submission.status,
        "reason": submission.reason,
        "isTest": submission.is_test,
        "patientId": str(submission.patient_id) if submission.patient_id else None,
        "journeyId": str(submission.journey_id) if submission.journey_id else None,
    }


def _received_event(submission: LeadAdSubmission) -> None:
    emit(
        organization=submission.organization_id,
        type="lead_ad_submission.received",
        subject_type="lead_ad_submission",
        subject_id=submission.id,
        actor=Actor("provider", submission.platform),
        data=_submission_data(submission),
        idempotency_key=f"lead_ad_submission.received:{submission.id}",
    )


def _status_event(submission: LeadAdSubmission, previous: str, actor: Actor):
    """Only meaningful outcomes; the same outcome of the same submission is always the same logical event."""
    assert submission.status in MEANINGFUL
    return emit(
        organization=submission.organization_id,
        type="lead_ad_submission.status_changed",
        subject_type="lead_ad_submission",
        subject_id=submission.id,
        actor=actor,
        data=_submission_data(submission) | {"previousStatus": previous},
        action="status_changed",
        changed_fields=["status"],
        idempotency_key=f"lead_ad_submission.status_changed:{submission.id}:{submission.status}",
    )


def _new_submission(connection: LeadAdConnection, delivery: Delivery, intake_id) -> LeadAdSubmission:
    return LeadAdSubmission(
        organization_id=connection.organization_id,
        connection=connection,
        intake_id=intake_id,
        platform=connection.platform,
        lead_ref=delivery.lead_ref,
        form_ref=delivery.form_ref,
        campaign_ref=delivery.campaign_ref,
        ad_ref=delivery.ad_ref,
        click_id=delivery.click_id,
        is_test=delivery.is_test,
        fields=delivery.fields or {},
        submitted_at=delivery.submitted_at,
    )


def submission_ensure(*, connection: LeadAdConnection, delivery: Delivery, intake_id) -> tuple[LeadAdSubmission, bool]:
    """The connection's submission for this lead, recorded (and lead_ad_submission.received emitted) the first time
    the lead arrives; a lead seen before (a platform retry, or the same lead in another body) is the same row."""
    existing = (
        LeadAdSubmission.objects.for_org(connection.organization_id)
        .filter(connection=connection, lead_ref=delivery.lead_ref)
        .first()
    )
    if existing is not None:
        return existing, False
    submission = _new_submission(connection, delivery, intake_id)
    try:
        with transaction.atomic():
            submission.save(force_insert=True)
            _received_event(submission)
    except IntegrityError:  # the same lead, recorded by a concurrent worker
        return (
            LeadAdSubmission.objects.for_org(connection.organization_id).get(
                connection=connection, lead_ref=delivery.lead_ref
            ),
            False,
        )
    return submission, True


@transaction.atomic
def submissions_ensure(*, connection: LeadAdConnection, deliveries: list[Delivery], intake_id) -> dict:
    """submission_ensure for a chunk of one connection's deliveries, in one transaction: one read of the leads seen
    before, one INSERT of the new ones (and their received events). {lead_ref: submission}."""
    refs = [d.lead_ref for d in deliveries]
    found = {
        row.lead_ref: row
        for row in LeadAdSubmission.objects.for_org(connection.organization_id).filter(
            connection=connection, lead_ref__in=refs
        )
    }
    fresh: dict[str, LeadAdSubmission] = {}
    for delivery in deliveries:
        if delivery.lead_ref not in found and delivery.lead_ref not in fresh:
            fresh[delivery.lead_ref] = _new_submission(connection, delivery, intake_id)
    if not fresh:
        return found
    try:
        with transaction.atomic():
            LeadAdSubmission.objects.bulk_create(list(fresh.values()))
            for submission in fresh.values():
                _received_event(submission)
    except IntegrityError:  # a concurrent worker recorded some of them: one at a time, each settled either way
        for delivery in deliveries:
            if delivery.lead_ref not in found:
                found[delivery.lead_ref], _ = submission_ensure(
                    connection=connection, delivery=delivery, intake_id=intake_id
                )
        return found
    return found | fresh


def _attribution(submission: LeadAdSubmission, click_id_type: str) -> dict[str, str]:
    """The touch a lead ad leaves: platform, lead ad, campaign, form, ad and the click id when the platform sent one."""
    values = {
        "utm_source": submission.platform,
        "utm_medium": "lead_ad",
        "utm_campaign": submission.campaign_ref,
        "utm_content": submission.form_ref,
        "utm_id": submission.ad_ref,
    }
    if submission.click_id and click_id_type:
        values[click_id_type] = submission.click_id
    return {key: value for key, value in values.items() if value}


def _make_lead(submission: LeadAdSubmission, *, user, fields: dict, click_id_type: str) -> None:
    connection = submission.connection
    organization = connection.organization
    found = interpret(fields, {})
    found.attribution.update(_attribution(submission, click_id_type))
    recorded = lead_record(
        organization=organization,
        user=user,
        found=found,
        occurred_at=submission.submitted_at or submission.created_at,
        journey_source="lead_ad",
        consent_source="lead_ad",
        consent_evidence=(
            f"{submission.platform} lead form {submission.form_ref or '(unknown form)'}, lead {submission.lead_ref}, "
            f"lead-ad submission {submission.id}"
        ),
        timeline_data={
            "leadAdSubmissionId": str(submission.id),
            "platform": submission.platform,
            "connectionName": connection.name[:120],
        },
        lead_source=_usable(connection.lead_source),
        location=_usable(connection.location),
        treatment=connection.default_treatment,
    )
    submission.patient, submission.patient_created = recorded.patient, recorded.created
    submission.journey_id = recorded.journey.id if recorded.journey else None
    submission.status, submission.reason = LeadAdSubmission.Status.PROCESSED, ""


def _usable(record):
    """A connection default still in use (not archived), or None."""
    return record if record is not None and record.archived_at is None else None


CLICK_ID_TYPES = {Platform.SEARCH_ADS: "gclid", Platform.SHORT_VIDEO: "ttclid"}


@transaction.atomic
def submission_map(*, submission_id, organization_id, fields: dict | None = None, refs: dict | None = None) -> str:
    """Turn a received submission into its outcome: a test lead or one without a usable e-mail or phone needs review
    (the answers are kept for the person who decides); otherwise the patient is matched or made and a journey opened
    (processed). `fields`/`refs`: the answers and ids fetched from the platform (social). Idempotent: a submission
    no longer received is left alone. Returns its status."""
    submission = (
        LeadAdSubmission.objects.for_org(organization_id)
        .select_for_update(of=("self",))
        .select_related("connection", "connection__organization", "connection__lead_source", "connection__location")
        .select_related("connection__default_treatment")
        .filter(id=submission_id)
        .first()
    )
    if submission is None or submission.status != LeadAdSubmission.Status.RECEIVED:
        return submission.status if submission else ""
    if fields is not None:
        submission.fields = fields
    for name, value in (refs or {}).items():
        if value and not getattr(submission, name):
            setattr(submission, name, value)
    found = interpret(submission.fields, {})
    if submission.is_test:
        submission.status, submission.reason = LeadAdSubmission.Status.NEEDS_REVIEW, "test_lead"
    elif found.lead_problems():
        submission.status, submission.reason = LeadAdSubmission.Status.NEEDS_REVIEW, "no_usable_contact"
    else:
        _make_lead(submission, user=None, fields=submission.fields,
                   click_id_type=CLICK_ID_TYPES.get(submission.platform, ""))  # fmt: skip
    submission.processed_at = timezone.now()
    submission.save()
    _status_event(submission, LeadAdSubmission.Status.RECEIVED, Actor("provider", submission.platform))
    return submission.status


@transaction.atomic
def submission_fail(*, submission_id, organization_id, reason: str) -> bool:
    """A received submission that cannot be made into a lead (the platform has no such lead, or the body's attempts
    ran out): failed, with the meaningful outcome's event. False when it was no longer received."""
    submission = (
        LeadAdSubmission.objects.for_org(organization_id)
        .select_for_update()
        .filter(id=submission_id, status=LeadAdSubmission.Status.RECEIVED)
        .first()
    )
    if submission is None:
        return False
    submission.status, submission.reason, submission.processed_at = (
        LeadAdSubmission.Status.FAILED,
        reason,
        timezone.now(),
    )
    submission.save(update_fields=["status", "reason", "processed_at", "updated_at"])
    _status_event(submission, LeadAdSubmission.Status.RECEIVED, Actor("provider", submission.platform))
    return True


RESOLVABLE_FIELDS = ("first_name", "last_name", "email", "phone")


@transaction.atomic
def submission_resolve(
    *, organization, user, submission: LeadAdSubmission, action: str, corrections: dict[str, str]
) -> LeadAdSubmission:
    """A person decides a submission that needs review: create_lead (with corrected name, e-mail or phone where the
    lead's own were unusable; a test lead becomes a real lead) → processed; dismiss → failed. Either emits
    lead_ad_submission.status_changed (actor: the person)."""
    submission = (
        LeadAdSubmission.objects.for_org(organization)
        .select_for_update(of=("self",))
        .select_related("connection", "connection__organization", "connection__lead_source", "connection__location")
        .select_related("connection__default_treatment")
        .get(id=submission.id)
    )
    if submission.status != LeadAdSubmission.Status.NEEDS_REVIEW:
        raise SubmissionNotInReview(details={"status": submission.status})
    previous = submission.status
    if action == "dismiss":
        submission.status, submission.reason = LeadAdSubmission.Status.FAILED, "dismissed"
    else:
        fields = dict(submission.fields) | {k: v for k, v in corrections.items() if v}
        problems = interpret(fields, {}).lead_problems()
        if problems:
            raise ValidationFailed(
                "The lead needs a usable e-mail or phone: send one.",
                details={"fields": {name: [problem] for name, problem in problems.items()}},
            )
        submission.fields = fields
        _make_lead(submission, user=user, fields=fields, click_id_type=CLICK_ID_TYPES.get(submission.platform, ""))
    submission.resolved_by, submission.resolved_at = user, timezone.now()
    submission.save()
    _status_event(submission, previous, Actor.user(user))
    return submission


# --- POST /leads ----------------------------------------------------------------------------------------------------


def content_digest(payload: dict) -> str:
    import json

    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class Pushed:
    lead: PushedLead
    replayed: bool


def lead_push(*, organization, user, credential_kind: str, data: dict[str, Any]) -> Pushed:
    """An integrator's lead: the same reading, matching, journey and consent rules as a capture. With externalId a
    retry of the identical lead answers the first result and records nothing; different content under the same id is
    409 LEAD_EXTERNAL_ID_CONFLICT."""
    external_id = data.get("external_id")
    digest = content_digest({k: v for k, v in data.items() if k != "external_id"})
    if external_id:
        existing = PushedLead.objects.for_org(organization).filter(external_id=external_id).first()
        if existing is not None:
            return _replay(existing, digest)
    try:
        with transaction.atomic():
            return Pushed(_push(organization, user, credential_kind, data, digest), replayed=False)
    except IntegrityError:
        if not external_id:
            raise
        existing = PushedLead.objects.for_org(organization).get(external_id=external_id)
        return _replay(existing, digest)


def _replay(existing: PushedLead, digest: str) -> Pushed:
    if not crypto.constant_time_equals(existing.content_digest, digest):
        raise ExternalIdConflict()
    return Pushed(existing, replayed=True)


def _push(organization, user, credential_kind: str, data: dict, digest: str) -> PushedLead:
    fields = {
        name: data[name]
        for name in ("first_name", "last_name", "email", "phone", "date_of_birth", "message", "treatment", "location")
        if data.get(name) not in (None, "")
    }
    fields.update(data.get("custom_fields") or {})
    if data.get("marketing_consent"):
        fields["marketing_consent"] = "true"
    found = interpret(fields, {})
    found.attribution.update({k: v for k, v in (data.get("attribution") or {}).items() if v})
    problems = found.lead_problems()
    if problems:
        raise ValidationFailed(
            "A lead needs a usable e-mail or phone.",
            details={"fields": {name: [problem] for name, problem in problems.items()}},
        )
    lead = PushedLead(
        organization=organization,
        external_id=data.get("external_id"),
        content_digest=digest,
        created_by=user,
        credential_kind=credential_kind,
    )
    recorded = lead_record(
        organization=organization,
        user=user,
        found=found,
        occurred_at=timezone.now(),
        journey_source="api",
        consent_source="api",
        consent_evidence=f"POST /leads ({credential_kind}) lead {lead.id}: {data.get('consent_evidence') or ''}",
        timeline_data={"pushedLeadId": str(lead.id), "source": "api"},
        lead_source=data.get("lead_source"),
        location=data.get("location_record"),
        treatment=data.get("treatment_record"),
    )
    lead.patient, lead.patient_created = recorded.patient, recorded.created
    lead.journey_id = recorded.journey.id if recorded.journey else None
    lead.save(force_insert=True)
    return lead
