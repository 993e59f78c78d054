"""Capture forms and their lifecycle: tokens, signing secrets, status, field mapping."""

import hashlib
import secrets as secrets_module
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.capture.errors import (
    CaptureFormArchived,
    NoPreviousSecret,
    SigningNotEnabled,
)
from apps.capture.models import CaptureForm, CaptureSubmission
from apps.core import crypto

TOKEN_PREFIX = "cap_"
SECRET_PREFIX = "capsec_"
SECRET_OVERLAP = timedelta(hours=24)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _new_token() -> tuple[str, str, str]:
    token = TOKEN_PREFIX + secrets_module.token_urlsafe(32)
    return token, token_digest(token), crypto.encrypt(token)


def form_token(form: CaptureForm) -> str:
    return crypto.decrypt(form.token_encrypted)


def form_secrets(form: CaptureForm) -> list[str]:
    """The signing secrets a signed post may use now: the current one, and the previous one in its overlap."""
    found = [crypto.decrypt(form.secret_encrypted)] if form.secret_encrypted else []
    if form.previous_secret_encrypted and (
        form.previous_secret_expires_at and form.previous_secret_expires_at > timezone.now()
    ):
        found.append(crypto.decrypt(form.previous_secret_encrypted))
    return found


# --- forms --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CreatedForm:
    form: CaptureForm
    token: str
    signing_secret: str | None  # shown once, when the form is created in signed mode


def _new_secret() -> str:
    return SECRET_PREFIX + secrets_module.token_urlsafe(32)


@transaction.atomic
def form_create(*, organization, user, data: dict[str, Any]) -> CreatedForm:
    token, digest, encrypted = _new_token()
    signed = data.get("delivery_mode") == CaptureForm.Mode.SIGNED
    secret = _new_secret() if signed else None
    confirm = data.pop("confirm_mapping", False)
    form = CaptureForm.objects.create(
        organization=organization,
        created_by=user,
        token_digest=digest,
        token_encrypted=encrypted,
        secret_encrypted=crypto.encrypt(secret) if secret else "",
        mapping_confirmed_at=timezone.now() if confirm else None,
        **data,
    )
    return CreatedForm(form=form, token=token, signing_secret=secret)


def _locked(*, organization, form: CaptureForm) -> CaptureForm:
    return CaptureForm.objects.for_org(organization).select_for_update().get(id=form.id)


def _writable(*, organization, form: CaptureForm) -> CaptureForm:
    form = _locked(organization=organization, form=form)
    if form.status == CaptureForm.Status.ARCHIVED:
        raise CaptureFormArchived()
    return form


@transaction.atomic
def form_update(*, organization, form: CaptureForm, data: dict[str, Any]) -> CaptureForm:
    form = _writable(organization=organization, form=form)
    for key, value in data.items():
        setattr(form, key, value)
    form.save()
    return form


@transaction.atomic
def form_set_status(*, organization, form: CaptureForm, status: str) -> CaptureForm:
    """Pause, resume or archive. Paused and archived tokens answer 404; archiving is final."""
    form = _writable(organization=organization, form=form)
    form.status = status
    form.archived_at = timezone.now() if status == CaptureForm.Status.ARCHIVED else None
    form.save(update_fields=["status", "archived_at", "updated_at"])
    return form


@transaction.atomic
def form_regenerate_token(*, organization, form: CaptureForm) -> tuple[CaptureForm, str]:
    """A new routing token; the old URL stops answering at once."""
    form = _writable(organization=organization, form=form)
    token, form.token_digest, form.token_encrypted = _new_token()
    form.save(update_fields=["token_digest", "token_encrypted", "updated_at"])
    return form, token


@transaction.atomic
def signing_enable(*, organization, form: CaptureForm) -> tuple[CaptureForm, str]:
    """Signed mode with a new secret (shown once); unsigned posts stop at once. Enabling again replaces the secret
    without overlap: use rotate for a gentle change."""
    form = _writable(organization=organization, form=form)
    secret = _new_secret()
    form.delivery_mode = CaptureForm.Mode.SIGNED
    form.secret_encrypted = crypto.encrypt(secret)
    form.previous_secret_encrypted, form.previous_secret_expires_at = "", None
    form.save()
    return form, secret


@transaction.atomic
def signing_disable(*, organization, form: CaptureForm) -> CaptureForm:
    form = _writable(organization=organization, form=form)
    form.delivery_mode = CaptureForm.Mode.PUBLIC
    form.secret_encrypted = form.previous_secret_encrypted = ""
    form.previous_secret_expires_at = None
    form.save()
    return form


@transaction.atomic
def secret_rotate(*, organization, form: CaptureForm) -> tuple[CaptureForm, str]:
    """A new secret, shown once; the previous one stays valid for 24 hours so senders can switch over."""
    form = _writable(organization=organization, form=form)
    if form.delivery_mode != CaptureForm.Mode.SIGNED:
        raise SigningNotEnabled()
    secret = _new_secret()
    form.previous_secret_encrypted = form.secret_encrypted
    form.previous_secret_expires_at = timezone.now() + SECRET_OVERLAP
    form.secret_encrypted = crypto.encrypt(secret)
    form.save()
    return form, secret


@transaction.atomic
def secret_revoke_previous(*, organization, form: CaptureForm) -> CaptureForm:
    form = _writable(organization=organization, form=form)
    if not form.previous_secret_encrypted or (
        form.previous_secret_expires_at and form.previous_secret_expires_at <= timezone.now()
    ):
        raise NoPreviousSecret()
    form.previous_secret_encrypted, form.previous_secret_expires_at = "", None
    form.save()
    return form


@transaction.atomic
def mapping_confirm(*, organization, form: CaptureForm, mapping: dict[str, str] | None) -> tuple[CaptureForm, int]:
    """Confirm the field mapping (optionally replacing it); the parked submissions are replayed in the order they
    arrived, after this commits. Returns the form and how many were parked."""
    # Allowed on an archived form too: its parked submissions are leads the practice already received.
    form = _locked(organization=organization, form=form)
    if mapping is not None:
        form.field_mapping = mapping
    form.mapping_confirmed_at = timezone.now()
    form.save()
    parked = CaptureSubmission.objects.for_org(organization).filter(form=form, status=CaptureSubmission.Status.PARKED)
    count = parked.update(status=CaptureSubmission.Status.RECEIVED)
    if count:
        from apps.capture.tasks import process_form_backlog

        transaction.on_commit(lambda: process_form_backlog.delay(str(form.id)))
    return form, count
