"""What a rule sees of a trigger: the condition fields' values, and the patient and journey its actions act on.

An event is about a patient when its subject is a patient or its data names one (data.patientId); about a journey
when its subject is a journey or its data names one (data.journeyId). The patient's fields are read as they are
when the rule is evaluated (the event carries ids, not the patient's state), in one query for a batch of events.
"""

from dataclasses import dataclass, field
from datetime import datetime

from apps.automations.schedules import tick_fields
from apps.core.uuids import parse_uuid
from apps.patients.public import Patient, Tag

MISSING = object()


@dataclass
class Subject:
    fields: dict
    patient: Patient | None = None
    journey_id: str | None = None
    event: object | None = None  # the Event (event triggers)
    tick_at: datetime | None = None  # schedule triggers
    subject_type: str = ""
    subject_id: str = ""
    extra: dict = field(default_factory=dict)


def _patient_id(event) -> str | None:
    raw = event.subject_id if event.subject_type == "patient" else (event.data or {}).get("patientId")
    parsed = parse_uuid(raw) if isinstance(raw, str) else None
    return str(parsed) if parsed else None


def _journey_id(event) -> str | None:
    raw = event.subject_id if event.subject_type == "journey" else (event.data or {}).get("journeyId")
    parsed = parse_uuid(raw) if isinstance(raw, str) else None
    return str(parsed) if parsed else None


def _patient_fields(patient: Patient | None, tag_ids: list[str]) -> dict:
    if patient is None:
        return {}
    return {
        "patient.status": patient.status,
        "patient.leadSourceId": str(patient.lead_source_id) if patient.lead_source_id else None,
        "patient.locationId": str(patient.location_id) if patient.location_id else None,
        "patient.tagIds": tag_ids,
    }


def event_subjects(organization, events: list) -> dict:
    """event id → Subject, for events of one practice (two queries however many events)."""
    patient_ids = {pid for pid in (_patient_id(e) for e in events) if pid}
    patients = {str(p.id): p for p in Patient.objects.for_org(organization).filter(id__in=patient_ids)}
    tags: dict[str, list[str]] = {pid: [] for pid in patients}
    if patients:
        rows = (
            Tag.objects.for_org(organization).filter(patients__id__in=list(patients)).values_list("patients__id", "id")
        )
        for patient_id, tag_id in rows:
            tags[str(patient_id)].append(str(tag_id))
    subjects = {}
    for event in events:
        data = event.data or {}
        patient = patients.get(_patient_id(event) or "")
        fields = {"actor.type": event.actor_type}
        fields.update({f"data.{key}": value for key, value in data.items()})
        fields.update(_patient_fields(patient, sorted(tags.get(str(patient.id), [])) if patient else []))
        subjects[event.id] = Subject(
            fields=fields,
            patient=patient,
            journey_id=_journey_id(event),
            event=event,
            subject_type=event.subject_type,
            subject_id=event.subject_id,
        )
    return subjects


def tick_subject(organization, tick_at: datetime) -> Subject:
    return Subject(fields=tick_fields(tick_at, organization), tick_at=tick_at)


# --- conditions ---------------------------------------------------------------------------------------------------


def _norm(value):
    if isinstance(value, str):
        parsed = parse_uuid(value)
        return str(parsed) if parsed else value
    return value


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _holds(operator: str, actual, value) -> bool:
    if operator == "exists":
        present = actual is not MISSING and actual not in (None, "", [])
        return present == value
    if actual is MISSING:
        return operator in ("neq", "not_in", "not_contains")
    if operator in ("contains", "not_contains"):
        found = isinstance(actual, list) and _norm(value) in [_norm(item) for item in actual]
        return found if operator == "contains" else not found
    actual, norm = _norm(actual), _norm(value)
    if operator == "eq":
        return actual == norm
    if operator == "neq":
        return actual != norm
    if operator == "in":
        return actual in [_norm(item) for item in value]
    if operator == "not_in":
        return actual not in [_norm(item) for item in value]
    if not (_number(actual) and _number(value)):
        return False
    return {"gt": actual > value, "gte": actual >= value, "lt": actual < value, "lte": actual <= value}[operator]


def evaluate(conditions: list[dict], subject: Subject) -> tuple[bool, list[dict]]:
    """All conditions hold (an empty list holds); each condition's verdict with the value it saw."""
    verdicts = []
    for condition in conditions:
        actual = subject.fields.get(condition["field"], MISSING)
        passed = _holds(condition["operator"], actual, condition["value"])
        verdicts.append({**condition, "actual": None if actual is MISSING else actual, "passed": passed})
    return all(v["passed"] for v in verdicts), verdicts
