"""Reads of the capture area."""

import time

from django.db import connection

from apps.capture.fields import unmapped_names
from apps.capture.models import AttributionTouch, CaptureForm, CaptureSubmission, IntakeReviewItem
from apps.capture.services import token_digest


def form_for_token(token: str) -> CaptureForm | None:
    """The active form this routing token opens, or None: unknown, paused and archived all look the same. Read from
    the database (one SELECT); the form found is remembered for form_for_token_remembered."""
    if not token or len(token) > 200:
        return None
    digest = token_digest(token)
    form = (
        CaptureForm.objects.unscoped()
        .select_related("organization")
        .filter(token_digest=digest, status=CaptureForm.Status.ACTIVE)
        .first()
    )
    _remember(digest, form)
    return form


# The receiving route's forms, per process: {token digest: (form, monotonic expiry)}. A remembered form is a
# snapshot, never trusted alone: the submission's INSERT only lands while the form's row is still that snapshot
# (same id and token, active, the same mode, kind, mapping and secrets), and the receiving view reads
# the form afresh and decides again whenever the snapshot did not hold or its answer was a refusal. So a paused form,
# a regenerated token or a rotated secret take effect at once, as when every post read the form.
FORM_MEMORY_SECONDS = 60.0
FORM_MEMORY_SIZE = 1024
_forms: dict[str, tuple[CaptureForm, float]] = {}


def _remember(digest: str, form: CaptureForm | None) -> None:
    if form is None:
        _forms.pop(digest, None)  # unknown tokens are not remembered: they cost their SELECT, as before
        return
    if len(_forms) >= FORM_MEMORY_SIZE:
        _forms.clear()
    _forms[digest] = (form, time.monotonic() + FORM_MEMORY_SECONDS)


def form_for_token_remembered(token: str) -> tuple[CaptureForm | None, bool]:
    """(form, remembered): the form as form_for_token reads it, or this process's snapshot of it from a recent read
    (no statement), with remembered=True. A snapshot must be confirmed by the write that relies on it
    (services.capture_receive does); forget_form drops it."""
    if not token or len(token) > 200:
        return None, False
    entry = _forms.get(token_digest(token))
    if entry is not None and entry[1] > time.monotonic():
        return entry[0], True
    return form_for_token(token), False


def forget_form(token: str) -> None:
    if token and len(token) <= 200:
        _forms.pop(token_digest(token), None)


def forms_page(*, organization, status: str | None = None, include_archived: bool = False, limit: int, offset: int):
    forms = CaptureForm.objects.for_org(organization)
    if status:
        forms = forms.filter(status=status)
    elif not include_archived:
        forms = forms.exclude(status=CaptureForm.Status.ARCHIVED)
    total = forms.count()
    return list(forms.order_by("-created_at", "-id")[offset : offset + limit]), total


def parked_summary(*, organization, forms: list[CaptureForm]) -> dict:
    """{form id: (parked count, field names still to map)} for these forms, in one query."""
    if not forms:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT s.form_id, count(DISTINCT s.id), array_remove(array_agg(DISTINCT k.key), NULL)
            FROM capture_capturesubmission s
            LEFT JOIN LATERAL jsonb_object_keys(s.fields) AS k(key) ON true
            WHERE s.organization_id = %s AND s.form_id = ANY(%s) AND s.status = 'parked'
            GROUP BY s.form_id
            """,
            [organization.id, [form.id for form in forms]],
        )
        rows = cursor.fetchall()
    by_form = {form.id: form for form in forms}
    return {
        form_id: (count, unmapped_names(dict.fromkeys(keys), by_form[form_id].field_mapping))
        for form_id, count, keys in rows
    }


def submissions_page(*, organization, form: CaptureForm, status: str | None = None, limit: int, offset: int):
    submissions = CaptureSubmission.objects.for_org(organization).filter(form=form)
    if status:
        submissions = submissions.filter(status=status)
    total = submissions.count()
    return list(submissions.order_by("-created_at", "-id")[offset : offset + limit]), total


def review_page(*, organization, status: str, patient_id=None, limit: int, offset: int):
    # The submission rides along: an item without a patient shows the fields it carried.
    items = IntakeReviewItem.objects.for_org(organization).filter(status=status).select_related("submission")
    if patient_id:
        items = items.filter(patient_id=patient_id)
    total = items.count()
    return list(items.order_by("-created_at", "-id")[offset : offset + limit]), total


def touches_of_patient(*, organization, patient_id, limit: int = 100) -> list[AttributionTouch]:
    """The patient's attribution touches, newest first (the first 100)."""
    return list(
        AttributionTouch.objects.for_org(organization)
        .filter(patient_id=patient_id)
        .order_by("-occurred_at", "-id")[:limit]
    )
