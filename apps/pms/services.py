"""Writes of the connected PMS: the connection (connect, update, rotate, disconnect), its health, starting and
resuming the historical import, and resolving held changes. Keyword-only, under transaction.atomic; events are
recorded in the same transaction (ids only)."""

import json
import secrets
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.crypto import decrypt, encrypt
from apps.events.services import Actor, emit
from apps.pms import sync
from apps.pms.errors import (
    PmsAlreadyConnected,
    PmsConnectionDisconnected,
    PmsImportCompleted,
    PmsReviewResolved,
    PmsReviewStale,
)
from apps.pms.models import (
    ConnectionStatus,
    Health,
    ImportState,
    ItemKind,
    PmsAppointmentLink,
    PmsConnection,
    PmsImport,
    PmsPatientLink,
    PmsSyncReview,
    ReviewStatus,
    SyncState,
)
from apps.pms.provider import Item

SECRET_OVERLAP = timezone.timedelta(hours=24)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def new_secret() -> str:
    return "pmswhsec_" + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Shown:
    """Secrets shown in one answer only."""

    signing_secret: str | None = None


def _actor(user) -> Actor:
    return Actor.user(user) if user is not None else Actor.system("pms")


def health_set(*, connection: PmsConnection, health: str, reason: str = "", actor: Actor | None = None) -> bool:
    """Move the connection's health (inside the caller's transaction); pms_connection.health_changed on every change
    of health or reason. True when it changed."""
    reason = "" if health == Health.HEALTHY else reason[:64]
    if connection.health == health and connection.health_reason == reason:
        return False
    previous = connection.health
    now = timezone.now()
    updated = (
        PmsConnection.objects.for_org(connection.organization_id)
        .filter(id=connection.id)
        .exclude(health=health, health_reason=reason)
        .update(health=health, health_reason=reason, health_changed_at=now, updated_at=now)
    )
    connection.health, connection.health_reason, connection.health_changed_at = health, reason, now
    if not updated:
        return False
    emit(
        organization=connection.organization_id,
        type="pms_connection.health_changed",
        subject_type="pms_connection",
        subject_id=connection.id,
        actor=actor or Actor.system("pms"),
        data={"health": health, "previousHealth": previous, "reason": reason or None},
    )
    return True


@transaction.atomic
def connection_create(*, organization, user, data: dict) -> tuple[PmsConnection, Shown, PmsImport]:
    """Connect the practice's PMS and start its historical import (status importing)."""
    secret = new_secret()
    connection = PmsConnection(
        organization=organization,
        name=data["name"],
        base_url=data["base_url"],
        api_key_encrypted=encrypt(data["api_key"]),
        signing_secret_encrypted=encrypt(secret),
        routing_token=new_token(),
        created_by=user,
    )
    try:
        with transaction.atomic():
            connection.save(force_insert=True)
    except IntegrityError:
        raise PmsAlreadyConnected() from None
    run = _import_new(connection=connection, user=user)
    return connection, Shown(signing_secret=secret), run


def _live(connection: PmsConnection, *, lock: bool = True) -> PmsConnection:
    rows = PmsConnection.objects.for_org(connection.organization_id).filter(id=connection.id)
    current = (rows.select_for_update() if lock else rows).get()
    if current.status == ConnectionStatus.DISCONNECTED:
        raise PmsConnectionDisconnected()
    return current


@transaction.atomic
def connection_update(*, organization, user, connection: PmsConnection, data: dict) -> PmsConnection:
    connection = _live(connection)
    if "name" in data:
        connection.name = data["name"]
    if "base_url" in data:
        connection.base_url = data["base_url"]
    if "api_key" in data:
        connection.api_key_encrypted = encrypt(data["api_key"])
    connection.save()
    if "api_key" in data and connection.health == Health.FAILING:
        health_set(connection=connection, health=Health.HEALTHY, actor=_actor(user))
    return connection


@transaction.atomic
def connection_rotate(
    *, organization, user, connection: PmsConnection, signing_secret: bool, routing_token: bool
) -> tuple[PmsConnection, Shown]:
    """A new signing secret (the previous one still verifies for 24 hours) and/or a new routing token (the old
    callback URL answers 404 at once)."""
    connection = _live(connection)
    shown = None
    if signing_secret:
        shown = new_secret()
        connection.previous_secret_encrypted = connection.signing_secret_encrypted
        connection.previous_secret_until = timezone.now() + SECRET_OVERLAP
        connection.signing_secret_encrypted = encrypt(shown)
    if routing_token:
        connection.routing_token = new_token()
    connection.save()
    return connection, Shown(signing_secret=shown)


@transaction.atomic
def connection_disconnect(*, organization, user, connection: PmsConnection) -> PmsConnection:
    """Disconnect: the callback URL answers 404, the import stops, credentials are wiped. Links and mirrored records
    stay. Repeating is harmless."""
    connection = PmsConnection.objects.for_org(organization).select_for_update().get(id=connection.id)
    if connection.status == ConnectionStatus.DISCONNECTED:
        return connection
    connection.status = ConnectionStatus.DISCONNECTED
    connection.disconnected_at = timezone.now()
    connection.api_key_encrypted = ""
    connection.signing_secret_encrypted = ""
    connection.previous_secret_encrypted = ""
    connection.routing_token = "disconnected-" + new_token()
    connection.save()
    PmsImport.objects.for_org(organization).filter(connection=connection, state=ImportState.RUNNING).update(
        state=ImportState.FAILED, updated_at=timezone.now()
    )
    return connection


def callback_secrets(connection) -> list[str]:
    found = [decrypt(connection.signing_secret_encrypted)] if connection.signing_secret_encrypted else []
    until = connection.previous_secret_until
    if connection.previous_secret_encrypted and until is not None and until > timezone.now():
        found.append(decrypt(connection.previous_secret_encrypted))
    return found


# --- imports -------------------------------------------------------------------------------------------------------


def _schedule(run: PmsImport) -> None:
    from apps.pms.tasks import run_import

    transaction.on_commit(lambda: run_import.delay(str(run.id)))


def _import_new(*, connection: PmsConnection, user) -> PmsImport:
    run = PmsImport.objects.create(
        organization_id=connection.organization_id,
        connection=connection,
        started_by=user,
        started_at=timezone.now(),
    )
    _schedule(run)
    return run


@transaction.atomic
def import_start(*, organization, user, connection: PmsConnection) -> tuple[PmsImport, bool]:
    """Start the connection's import; an unfinished one is resumed instead (never two runs). (run, created)."""
    connection = _live(connection)
    unfinished = (
        PmsImport.objects.for_org(organization)
        .select_for_update()
        .filter(connection=connection)
        .exclude(state=ImportState.COMPLETED)
        .first()
    )
    if unfinished is not None:
        return _resume(unfinished), False
    return _import_new(connection=connection, user=user), True


def _resume(run: PmsImport) -> PmsImport:
    if run.state == ImportState.FAILED:
        run.state = ImportState.RUNNING
        run.save(update_fields=["state", "updated_at"])
    _schedule(run)
    return run


@transaction.atomic
def import_resume(*, organization, user, run: PmsImport) -> PmsImport:
    run = PmsImport.objects.for_org(organization).select_for_update().select_related("connection").get(id=run.id)
    if run.state == ImportState.COMPLETED:
        raise PmsImportCompleted()
    _live(run.connection)
    return _resume(run)


# --- reviews -------------------------------------------------------------------------------------------------------


@transaction.atomic
def review_resolve(*, organization, user, review: PmsSyncReview, action: str) -> PmsSyncReview:
    """apply_incoming: the held content is applied (as the content of its revision) and becomes what the link
    compares with; keep_current: the CRM keeps what it has. Either way the record is in sync again unless another
    review of it is still open."""
    review = (
        PmsSyncReview.objects.for_org(organization).select_for_update().select_related("connection").get(id=review.id)
    )
    if review.status != ReviewStatus.OPEN:
        raise PmsReviewResolved()
    connection = review.connection
    link_model, id_field = (
        (PmsPatientLink, "provider_patient_id")
        if review.kind == ItemKind.PATIENT
        else (PmsAppointmentLink, "provider_appointment_id")
    )
    link = (
        link_model.objects.for_org(organization)
        .select_for_update()
        .filter(connection=connection, **{id_field: review.provider_item_id})
        .first()
    )
    if action == "apply_incoming":
        if link is None or link.revision != review.revision:
            raise PmsReviewStale()
        if connection.status == ConnectionStatus.DISCONNECTED:
            raise PmsConnectionDisconnected()
        content = json.loads(decrypt(review.incoming_encrypted))
        item = Item(
            kind=review.kind,
            id=review.provider_item_id,
            revision=review.revision,
            content=content,
            content_hash=review.incoming_hash,
            key_suffix=f":resolved:{review.id}",
        )
        # Applied as a newer revision would be; the link then holds the incoming content's hash at this revision.
        link.revision = review.revision - 1
        link.save(update_fields=["revision", "updated_at"])
        sync.apply(connection, review.kind, [item], live=True)
        review.status = ReviewStatus.APPLIED
    else:
        review.status = ReviewStatus.KEPT
    review.resolved_at, review.resolved_by = timezone.now(), user
    review.incoming_encrypted = ""
    review.save(update_fields=["status", "resolved_at", "resolved_by", "incoming_encrypted", "updated_at"])
    if link is not None:
        still_open = (
            PmsSyncReview.objects.for_org(organization)
            .filter(connection=connection, kind=review.kind, provider_item_id=review.provider_item_id)
            .filter(status=ReviewStatus.OPEN)
            .exists()
        )
        link_model.objects.for_org(organization).filter(id=link.id).update(
            sync_state=SyncState.REVIEW if still_open else SyncState.SYNCED, updated_at=timezone.now()
        )
    return review
