"""Leads that reach the practice through other areas (native lead ads, POST /leads): the same field meaning,
matching, journey and consent rules as a capture, without a capture form. Runs in the caller's transaction and takes
the practice's capture lock, so a lead ad and a website capture of the same person never make two patients."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apps.capture.fields import Interpreted
from apps.capture.services.processing import _by_name, consent_grant, lead_lock, lead_patient, touch_record
from apps.journeys.public import (
    Journey,
    JourneyStatus,
    Treatment,
    journey_create,
    treatment_ensure_builtin,
)
from apps.patients.public import (
    Activity,
    Location,
    Patient,
    timeline_record,
)


@dataclass(frozen=True)
class LeadRecorded:
    patient: Patient
    created: bool  # a new patient was made (else an existing one was matched by e-mail or phone)
    journey: Journey | None
    archived_patient: bool  # the lead matched an archived patient (kept there; a person may want to look)


def lead_record(
    *,
    organization,
    user,
    found: Interpreted,
    occurred_at: datetime,
    journey_source: str,
    consent_source: str,
    consent_evidence: str,
    timeline_data: dict[str, Any],
    lead_source=None,
    location=None,
    treatment=None,
) -> LeadRecorded:
    """Match or create the patient from `found` (apps.capture.fields.interpret), fill only the gaps of a known
    patient, open a journey on the treatment named (else `treatment`, else General enquiry) unless one is open there,
    record the attribution touch and a timeline entry, and grant marketing consent (with `consent_evidence`) on the
    channels the lead gave, when it said yes. The caller checks `found.lead_problems()` first: a lead needs a usable
    e-mail or phone."""
    lead_lock(organization.pk)
    location = _by_name(Location, organization, found.location) or location
    treatment = _by_name(Treatment, organization, found.treatment) or treatment
    patient, created = lead_patient(
        organization=organization, user=user, found=found, location=location, lead_source=lead_source
    )
    treatment = treatment if treatment is not None and treatment.active else None
    treatment = treatment or treatment_ensure_builtin(organization=organization)
    journey = None
    if not created:  # a patient made just now has no journey yet
        journeys = Journey.objects.for_org(organization).filter(patient=patient, status=JourneyStatus.OPEN)
        journey = journeys.filter(treatment=treatment).first()
    if journey is None:
        journey = journey_create(
            organization=organization,
            user=user,
            data={"patient": patient, "treatment": treatment, "source": journey_source, "assignee": None},
        )
    touch_record(organization_id=organization.pk, patient=patient, found=found, occurred_at=occurred_at)
    timeline_record(
        organization=organization,
        user=user,
        patient_id=patient.id,
        kind=Activity.Kind.CAPTURED,
        summary=found.message,
        data=timeline_data,
    )
    if found.marketing_consent:
        consent_grant(
            organization=organization,
            user=user,
            patient=patient,
            given=found.patient,
            source=consent_source,
            evidence=consent_evidence,
        )
    return LeadRecorded(patient, created, journey, archived_patient=patient.archived_at is not None)
