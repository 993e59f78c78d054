"""Reads of the capture area."""

from django.db import connection

from apps.capture.fields import unmapped_names
from apps.capture.models import AttributionTouch, CaptureForm, CaptureSubmission, IntakeReviewItem
from apps.capture.services import token_digest


def form_for_token(token: str) -> CaptureForm | None:
    """The active form this routing token opens, or None: unknown, paused and archived all look the same."""
    if not token or len(token) > 200:
        return None
    return (
        CaptureForm.objects.unscoped()
        .select_related("organization")
        .filter(token_digest=token_digest(token), status=CaptureForm.Status.ACTIVE)
        .first()
    )


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
