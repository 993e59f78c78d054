"""Turning stored submissions into leads and journeys: matching, drains of a practice, the sweep."""

import logging
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from apps.capture.fields import CLICK_IDS, UTM_FIELDS, Interpreted, interpret, phone_digits
from apps.capture.models import AttributionTouch, CaptureForm, CaptureSubmission, IntakeReviewItem
from apps.capture.services.receiving import _drain_flag
from apps.core.drains import run_drain
from apps.journeys.public import Journey, JourneyStatus, Treatment, journey_create, treatment_ensure_builtin
from apps.patients.public import (
    Activity,
    LeadSource,
    Location,
    MarketingConsent,
    Patient,
    consent_record,
    patient_create,
    patient_match,
    patient_update,
    timeline_record,
)

logger = logging.getLogger("apps.capture")

MAX_PROCESS_ATTEMPTS = 10


def drain_practice(*, organization_id, batch: int = 100) -> int:
    """Process the practice's stored submissions, oldest first, each in its own transaction (core.drains)."""
    return run_drain(
        _drain_flag(organization_id),
        lambda: CaptureSubmission.objects.for_org(organization_id).filter(
            status=CaptureSubmission.Status.RECEIVED, attempts__lt=MAX_PROCESS_ATTEMPTS
        ),
        lambda submission_id: submission_process(submission_id=submission_id, organization_id=organization_id),
        batch=batch,
    )


def _usable(model, organization, record):
    """A form default that is still in use (not archived), or None."""
    if record is None:
        return None
    if model is Treatment:
        return record if record.active else None
    return record if record.archived_at is None else None


def _by_name(model, organization, name: str):
    if not name:
        return None
    queryset = model.objects.for_org(organization).filter(name__iexact=name)
    queryset = queryset.filter(active=True) if model is Treatment else queryset.filter(archived_at__isnull=True)
    return queryset.order_by("created_at", "id").first()


def _fill_gaps(patient: Patient, data: dict[str, Any]) -> dict[str, Any]:
    """What a known patient's record lacks and the submission brings: never overwrites what the practice has."""
    return {key: value for key, value in data.items() if getattr(patient, key) in (None, "")}


def lead_lock(organization_id) -> None:
    """One lead of a practice at a time, to the commit, whichever surface or path makes it (capture drain, sweep,
    replay, lead ads, POST /leads): two leads of one person made at once would both find no patient and create two."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"capture:{organization_id}"])


def lead_patient(*, organization, user, found: Interpreted, location, lead_source, by_email: bool = True):
    """(patient, created): the practice's patient with the lead's e-mail (when `by_email`) or phone, with only the
    gaps of its record filled, else a new one made from the lead."""
    patient = patient_match(
        organization=organization,
        email=found.patient.get("email") if by_email else None,
        phone=found.patient.get("phone_mobile"),
    )
    if patient is None:
        data = dict(found.patient)
        data.setdefault("first_name", "Unknown")
        data["custom_fields"] = found.custom
        data |= {"location": location, "lead_source": lead_source}
        return patient_create(organization=organization, user=user, data=data), True
    gaps = _fill_gaps(patient, found.patient | {"location": location, "lead_source": lead_source})
    extra = {k: v for k, v in found.custom.items() if k not in patient.custom_fields}
    if extra:
        gaps["custom_fields"] = patient.custom_fields | extra
    if gaps:
        patient = patient_update(organization=organization, user=user, patient=patient, data=gaps)
    return patient, False


def touch_record(*, organization_id, patient: Patient, found: Interpreted, occurred_at, form=None, submission=None):
    """The lead's attribution touch (UTM fields, the first click id, landing page, referrer)."""
    attribution = found.attribution
    click = next(((name, attribution[name]) for name in CLICK_IDS if attribution.get(name)), ("", ""))
    AttributionTouch.objects.create(
        organization_id=organization_id,
        patient=patient,
        form=form,
        submission=submission,
        **{name: attribution.get(name, "")[:255] for name in UTM_FIELDS},
        click_id_type=click[0],
        click_id=click[1][:500],
        landing_url=attribution.get("landing_url", ""),
        referrer=attribution.get("referrer", ""),
        occurred_at=occurred_at,
    )


def consent_grant(*, organization, user, patient: Patient, given: dict, source: str, evidence: str) -> None:
    """Marketing consent the lead ticked: granted, with its evidence, only on the channels this lead gave and the
    patient's record holds (never on an address the person did not enter)."""
    channels = []
    if given.get("email") and (patient.email or "").lower() == given["email"].lower():
        channels.append(MarketingConsent.Channel.EMAIL)
    if given.get("phone_mobile") and phone_digits(patient.phone_mobile or "") == phone_digits(given["phone_mobile"]):
        channels.append(MarketingConsent.Channel.SMS)
    for channel in channels:
        consent_record(
            organization=organization,
            user=user,
            patient=patient,
            channel=channel,
            status=MarketingConsent.State.GRANTED,
            source=source,
            evidence=evidence[:1000],
        )


@transaction.atomic
def submission_process(*, submission_id, organization_id) -> CaptureSubmission | None:
    """Turn one stored submission into its lead: match or create the patient, open the journey, record the touch,
    consent and message, and open an intake-review item where a form default could not be applied. Idempotent:
    a submission already processed (or parked, or taken by another worker) is left alone."""
    submission = (
        CaptureSubmission.objects.for_org(organization_id)
        # Only the submission row: FOR UPDATE over the join would also lock the form and the practice row (every
        # tenant insert's foreign-key check waits on that) and make concurrent captures of one form skip each other.
        .select_for_update(skip_locked=True, of=("self",))
        .select_related("form", "form__organization")
        .filter(id=submission_id, status=CaptureSubmission.Status.RECEIVED)
        .first()
    )
    if submission is None:
        return None
    lead_lock(organization_id)
    form, organization = submission.form, submission.form.organization
    submission.attempts += 1
    if form.mapping_confirmed_at is None:
        submission.status = CaptureSubmission.Status.PARKED
        submission.save(update_fields=["status", "attempts", "updated_at"])
        return submission
    found = interpret(submission.fields, form.field_mapping)
    calls = form.kind == CaptureForm.Kind.INCOMING_CALLS
    if found.lead_problems(phone_required=calls):
        # No lead can be made, but the lead is never dropped silently: a person sees it, with what was sent.
        submission.status = CaptureSubmission.Status.REJECTED
        submission.problem = "no usable phone" if calls else "no usable e-mail or phone"
        submission.save(update_fields=["status", "problem", "attempts", "updated_at"])
        IntakeReviewItem.objects.create(
            organization=organization,
            form=form,
            submission=submission,
            patient=None,
            reasons=[IntakeReviewItem.Reason.NO_USABLE_CONTACT],
        )
        return submission

    reasons: list[str] = []
    location = _by_name(Location, organization, found.location) or _usable(Location, organization, form.location)
    # The default was needed (nothing named, or the named one unknown) and could not be applied: a person decides.
    if location is None and form.location_id is not None:
        reasons.append(IntakeReviewItem.Reason.LOCATION_ARCHIVED)
    lead_source = _usable(LeadSource, organization, form.lead_source)
    if lead_source is None and form.lead_source_id is not None:
        reasons.append(IntakeReviewItem.Reason.LEAD_SOURCE_ARCHIVED)
    treatment = _by_name(Treatment, organization, found.treatment) or _usable(
        Treatment, organization, form.default_treatment
    )
    if treatment is None and form.default_treatment_id is not None:
        reasons.append(IntakeReviewItem.Reason.TREATMENT_ARCHIVED)

    # An incoming call is matched by the caller's number only; a form submission by e-mail or phone.
    patient, created = lead_patient(
        organization=organization,
        user=None,
        found=found,
        location=location,
        lead_source=lead_source,
        by_email=not calls,
    )
    if not created and patient.archived_at is not None:
        reasons.append(IntakeReviewItem.Reason.PATIENT_ARCHIVED)

    journey = _journey_for(organization=organization, form=form, patient=patient, treatment=treatment)
    touch_record(
        organization_id=form.organization_id,
        patient=patient,
        found=found,
        occurred_at=submission.created_at,
        form=form,
        submission=submission,
    )
    timeline_record(
        organization=organization,
        user=None,
        patient_id=patient.id,
        kind=Activity.Kind.CAPTURED,
        summary=found.message,
        data={"formId": str(form.id), "formName": form.name, "kind": form.kind, "submissionId": str(submission.id)},
    )
    if found.marketing_consent:
        consent_grant(
            organization=organization,
            user=None,
            patient=patient,
            given=found.patient,
            source="capture_form",
            evidence=f"capture form {form.id} ({form.name[:80]}), submission {submission.id}",
        )
    if reasons:
        IntakeReviewItem.objects.create(
            organization=organization, form=form, submission=submission, patient=patient, reasons=reasons
        )
    submission.status = CaptureSubmission.Status.PROCESSED
    submission.patient = patient
    submission.patient_created = created
    submission.journey_id = journey.id if journey else None
    submission.processed_at = timezone.now()
    submission.save(
        update_fields=["status", "patient", "patient_created", "journey_id", "processed_at", "attempts", "updated_at"]
    )
    return submission


def _journey_for(*, organization, form: CaptureForm, patient: Patient, treatment: Treatment | None) -> Journey | None:
    """Form submissions open a journey on the chosen treatment unless the patient has one open there already. An
    incoming call stays on any journey the caller has open; otherwise one opens on the form's default treatment or
    General enquiry."""
    journeys = Journey.objects.for_org(organization).filter(patient=patient, status=JourneyStatus.OPEN)
    if form.kind == CaptureForm.Kind.INCOMING_CALLS:
        current = journeys.order_by("-created_at", "-id").first()
        if current is not None:
            return current
    treatment = treatment or treatment_ensure_builtin(organization=organization)
    current = journeys.filter(treatment=treatment).first()
    if current is not None:
        return current
    source = "incoming_call" if form.kind == CaptureForm.Kind.INCOMING_CALLS else "capture_form"
    return journey_create(
        organization=organization,
        user=None,
        data={"patient": patient, "treatment": treatment, "source": source, "assignee": None},
    )


def unpark_confirmed(*, older_than: timedelta = timedelta(seconds=30)) -> int:
    """Parked submissions of forms whose mapping is confirmed, back to received: a post that raced the confirmation
    (read the form unconfirmed, stored after the confirmation's replay) would otherwise wait for ever."""
    return (
        CaptureSubmission.objects.unscoped()
        .filter(
            status=CaptureSubmission.Status.PARKED,
            form__mapping_confirmed_at__isnull=False,
            created_at__lte=timezone.now() - older_than,
        )
        .update(status=CaptureSubmission.Status.RECEIVED)
    )


def process_backlog(*, form_id=None, older_than: timedelta = timedelta(0), limit: int = 500) -> int:
    """Process stored submissions still waiting (after a confirmation, or a failure), oldest first. Each runs in
    its own transaction, so one failing does not hold back the others."""
    queryset = CaptureSubmission.objects.unscoped().filter(
        status=CaptureSubmission.Status.RECEIVED,
        attempts__lt=MAX_PROCESS_ATTEMPTS,
        created_at__lte=timezone.now() - older_than,
    )
    if form_id is not None:
        queryset = queryset.filter(form_id=form_id)
    done = 0
    for submission_id, organization_id in queryset.order_by("created_at", "id").values_list("id", "organization_id")[
        :limit
    ]:
        try:
            if submission_process(submission_id=submission_id, organization_id=organization_id):
                done += 1
        except Exception as exc:
            logger.warning("capture submission %s not processed (%s); will retry", submission_id, type(exc).__name__)
            CaptureSubmission.objects.unscoped().filter(id=submission_id).update(attempts=F("attempts") + 1)
    return done
