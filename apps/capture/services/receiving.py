"""Receiving submissions: storing them (and their files) and asking a worker to process them."""

import logging
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from apps.capture.errors import (
    DeliveryConflict,
)
from apps.capture.fields import interpret
from apps.capture.models import CaptureAttachment, CaptureForm, CaptureSubmission
from apps.core import crypto
from apps.core.drains import request_drain
from apps.core.errors import ValidationFailed

logger = logging.getLogger("apps.capture")


@dataclass(frozen=True)
class Incoming:
    """A post, as the view read it: flat fields, the delivery id (if any), a digest of the content, and files."""

    fields: dict[str, Any]
    delivery_id: str | None
    content_digest: str
    files: list = ()  # [(field name, UploadedFile)]


@dataclass(frozen=True)
class Receipt:
    submission: CaptureSubmission
    replayed: bool  # the same delivery id and content came before: nothing new was recorded


def _store(*, form: CaptureForm, incoming: Incoming, status: str) -> Receipt:
    submission = CaptureSubmission(
        organization_id=form.organization_id,
        form=form,
        delivery_id=incoming.delivery_id,
        content_digest=incoming.content_digest,
        fields=incoming.fields,
        status=status,
    )
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:  # the form is still the one the request was decided on
                cursor.execute(_FORM_UNCHANGED + " FOR SHARE", _form_snapshot(form))
                if cursor.fetchone() is None:
                    raise FormChanged()
            submission.save(force_insert=True)
            _store_files(submission, incoming.files)
    except IntegrityError:
        if incoming.delivery_id is None:
            raise
        existing = CaptureSubmission.objects.for_org(form.organization_id).get(
            form=form, delivery_id=incoming.delivery_id
        )
        if not crypto.constant_time_equals(existing.content_digest, incoming.content_digest):
            raise DeliveryConflict() from None
        return Receipt(existing, replayed=True)
    return Receipt(submission, replayed=False)


class FormChanged(Exception):
    """The form the request was decided on is no longer the form's row (paused, archived, token regenerated,
    secrets or mapping changed since this process read it): nothing was stored; decide again on a fresh read."""


# Everything the request decides on: the form is active under this token, and its mode, kind, mapping and secrets
# are the ones read (compared column by column, not by updated_at, which an UPDATE statement need not touch).
_SNAPSHOT = (
    '"id" = %s AND "token_digest" = %s AND "status" = %s AND "delivery_mode" = %s AND "kind" = %s '
    'AND "field_mapping" = %s AND "mapping_confirmed_at" IS NOT DISTINCT FROM %s AND "secret_encrypted" = %s '
    'AND "previous_secret_encrypted" = %s AND "previous_secret_expires_at" IS NOT DISTINCT FROM %s'
)
# One statement: the submission lands only if the form's row is still the one the request was decided on (see
# apps.capture.selectors.form_for_token_remembered), and a delivery id already stored inserts nothing (the partial
# unique index on organization, form and delivery id; a replay or a conflict, told apart afterwards).
_INSERT = (
    'INSERT INTO "capture_capturesubmission" ("id", "organization_id", "form_id", "delivery_id", "content_digest", '
    '"status", "fields", "patient_created", "problem", "attempts", "created_at", "updated_at") '
    'SELECT %s, "organization_id", "id", %s, %s, %s, %s, false, \'\', 0, %s, %s '
    'FROM "capture_captureform" WHERE ' + _SNAPSHOT + " ON CONFLICT DO NOTHING"
)
_FORM_UNCHANGED = 'SELECT 1 FROM "capture_captureform" WHERE ' + _SNAPSHOT  # noqa: S608 (constant text)


def _form_snapshot(form: CaptureForm) -> list:
    mapping = CaptureForm._meta.get_field("field_mapping").get_db_prep_save(form.field_mapping, connection)
    return [
        form.id,
        form.token_digest,
        CaptureForm.Status.ACTIVE,
        form.delivery_mode,
        form.kind,
        mapping,
        form.mapping_confirmed_at,
        form.secret_encrypted,
        form.previous_secret_encrypted,
        form.previous_secret_expires_at,
    ]


def _insert(*, form: CaptureForm, incoming: Incoming, status: str) -> Receipt:
    """Store a post without files: one INSERT (autocommit: durable when it returns). 0 rows is a delivery id
    already stored or a form that changed; only then is anything read."""
    now = timezone.now()
    submission = CaptureSubmission(
        organization_id=form.organization_id,
        form=form,
        delivery_id=incoming.delivery_id,
        content_digest=incoming.content_digest,
        fields=incoming.fields,
        status=status,
        created_at=now,
        updated_at=now,
    )
    fields_value = CaptureSubmission._meta.get_field("fields").get_db_prep_save(incoming.fields, connection)
    params = [submission.id, incoming.delivery_id, incoming.content_digest, status, fields_value, now, now]
    with connection.cursor() as cursor:
        cursor.execute(_INSERT, [*params, *_form_snapshot(form)])
        inserted = cursor.rowcount == 1
        if not inserted:
            cursor.execute(_FORM_UNCHANGED, _form_snapshot(form))
            unchanged = cursor.fetchone() is not None
    if inserted:
        return Receipt(submission, replayed=False)
    if not unchanged or incoming.delivery_id is None:
        raise FormChanged()
    existing = CaptureSubmission.objects.for_org(form.organization_id).get(form=form, delivery_id=incoming.delivery_id)
    if not crypto.constant_time_equals(existing.content_digest, incoming.content_digest):
        raise DeliveryConflict()
    return Receipt(existing, replayed=True)


class AttachmentsNotStored(Exception):
    """A multipart file could not be written to the media storage: the capture is refused as not stored."""


def _store_files(submission: CaptureSubmission, files) -> None:
    """Files go to the media storage inside the storing transaction: if one cannot be written the whole capture is
    refused (503) and the files already written are removed."""
    from apps.accounts.services.media import media_storage

    storage = media_storage()
    written: list[str] = []
    try:
        for field_name, upload in files:
            name = storage.save(f"capture/{submission.organization_id}/{submission.id}/{upload.name[-100:]}", upload)
            written.append(name)
            CaptureAttachment.objects.create(
                organization_id=submission.organization_id,
                submission=submission,
                field_name=field_name[:200],
                file_name=upload.name[-255:],
                content_type=(upload.content_type or "")[:200],
                size=upload.size,
                storage_name=name,
            )
    except Exception as exc:
        for name in written:
            try:
                storage.delete(name)
            except Exception:
                logger.warning("capture attachment cleanup failed")
        if isinstance(exc, DatabaseError):
            raise
        # Any storage backend's failure (OSError on disk, botocore's errors on S3): the capture is not stored.
        raise AttachmentsNotStored(type(exc).__name__) from None


def _require_caller_number(*, form: CaptureForm, incoming: Incoming) -> None:
    """An incoming call is one caller's number: without a usable one (after the mapping) it is refused, unrecorded."""
    if not interpret(incoming.fields, form.field_mapping).patient.get("phone_mobile"):
        raise ValidationFailed.for_field("phone", "an incoming call needs the caller's phone number")


def capture_receive(*, form: CaptureForm, incoming: Incoming) -> Receipt:
    """Store the post (idempotent per delivery id) and queue its processing. Stored is the promise the 201 makes:
    the lead is made by a worker moments later (`tasks.drain_practice`), and if the broker or the processing
    fails the beat sweep picks the submission up. A post that could not be stored raises (the view answers 503,
    nothing was kept). Without files the request's only statement is the INSERT; FormChanged when `form` (a
    remembered snapshot) no longer matches its row: nothing stored, the caller decides again on a fresh read."""
    confirmed = form.mapping_confirmed_at is not None
    if confirmed and form.kind == CaptureForm.Kind.INCOMING_CALLS:
        _require_caller_number(form=form, incoming=incoming)
    status = CaptureSubmission.Status.RECEIVED if confirmed else CaptureSubmission.Status.PARKED
    if incoming.files:
        receipt = _store(form=form, incoming=incoming, status=status)  # the files' rows in the same transaction
    else:
        receipt = _insert(form=form, incoming=incoming, status=status)
    if receipt.submission.status == CaptureSubmission.Status.RECEIVED:
        _queue_processing(receipt.submission)
    return receipt


def _drain_flag(organization_id) -> str:
    return f"svc:capture:drain:{organization_id}"


def _queue_processing(submission: CaptureSubmission) -> None:
    """Ask a worker to drain the practice's stored submissions (core.drains: one Celery message per burst)."""
    from apps.capture.tasks import drain_practice

    request_drain(_drain_flag(submission.organization_id), drain_practice, str(submission.organization_id))
