"""Applying PMS items to the CRM: patients matched or created and linked, appointments mirrored into the diary,
practitioners matched by the PMS's practitioner id (created when unknown). Set-based: one batch costs a handful of
statements whatever its size (bulk INSERT and UPDATE, one lookup per kind), never a query per row.

The historical import calls these with live=False and records no event at all. Live callbacks (one item at a time,
inside the receipt's transaction) call them with live=True and apply emission rule 1: the item's events carry the
idempotency key pms:<connection>:<kind>:<item id>:<revision>, so overlap with the import, provider retries and queue
redelivery keep one logical event; an unchanged replay or a revision-only bump (same content hash) changes nothing
but the link's revision and records nothing; different content at the same revision is held (PmsSyncReview,
pms_sync.review_required) and nothing is applied; a newer revision applies; an older one is ignored (stale).

Patients written here are the PMS's (the system of record): rows are written directly, as the PMS says, without the
CRM's own patient rules (a PMS patient may lack an e-mail and a phone). A patient matched to an existing CRM patient
(same e-mail, any case, or same phone digits) only gets the fields it lacked; a newer revision then applies in full.
Events carry ids only."""

import datetime
import json
import uuid
from collections import Counter
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.db.models.functions import Upper
from django.utils import timezone

from apps.appointments.public import Appointment
from apps.core.crypto import encrypt
from apps.events.services import Actor, emit
from apps.patients.public import Patient, Practitioner, Status, digits_of
from apps.pms.models import (
    ItemKind,
    PmsAppointmentLink,
    PmsConnection,
    PmsPatientLink,
    PmsPractitionerLink,
    PmsSyncReview,
    ReviewStatus,
    SyncState,
)
from apps.pms.provider import Item

PATIENT_FIELDS = {  # content key → Patient field
    "first_name": "first_name",
    "last_name": "last_name",
    "email": "email",
    "phone": "phone_mobile",
    "date_of_birth": "date_of_birth",
}
PATIENT_WIRE = {
    "first_name": "firstName",
    "last_name": "lastName",
    "email": "email",
    "phone": "phoneMobile",
    "date_of_birth": "dateOfBirth",
}
APPOINTMENT_WIRE = {
    "starts_at": "startsAt",
    "ends_at": "endsAt",
    "status": "status",
    "patient_id": "patientId",
    "practitioner_id": "practitionerId",
}


@dataclass
class Outcome:
    counts: Counter = field(default_factory=Counter)
    errors: list = field(default_factory=list)  # [(code, item id)]

    def skip(self, code: str, item_id: str) -> None:
        self.counts["skipped"] += 1
        self.errors.append((code, item_id))


def actor_of(connection: PmsConnection) -> Actor:
    return Actor("provider", connection.provider)


def item_key(connection: PmsConnection, item: Item) -> str:
    return f"pms:{connection.id}:{item.kind}:{item.id}:{item.revision}{item.key_suffix}"


def _date(value):
    return datetime.date.fromisoformat(value) if value else None


def _instant(value):
    return datetime.datetime.fromisoformat(value)


def _patient_values(content: dict) -> dict:
    values = {PATIENT_FIELDS[key]: content[key] for key in PATIENT_FIELDS}
    values["date_of_birth"] = _date(values["date_of_birth"])
    return values


def _latest_per_id(items: list[Item]) -> list[Item]:
    """A page or body naming one record twice: its highest revision only (the first of equal ones)."""
    best: dict[str, Item] = {}
    for item in items:
        if item.id not in best or item.revision > best[item.id].revision:
            best[item.id] = item
    return list(best.values())


def _hold(connection, item: Item, *, live: bool, patient_id=None, appointment_id=None) -> None:
    """Different content at the revision already applied: a review, once per distinct content (replays add none)."""
    review, created = PmsSyncReview.objects.for_org(connection.organization_id).get_or_create(
        connection=connection,
        kind=item.kind,
        provider_item_id=item.id,
        revision=item.revision,
        incoming_hash=item.content_hash,
        defaults={
            "organization_id": connection.organization_id,
            "incoming_encrypted": encrypt(json.dumps(item.content)),
            "patient_id": patient_id,
            "appointment_id": appointment_id,
        },
    )
    if created and live:
        data = {"kind": item.kind, "connectionId": str(connection.id), "revision": item.revision}
        data |= {"patientId": str(patient_id)} if patient_id else {"appointmentId": str(appointment_id)}
        emit(
            organization=connection.organization_id,
            type="pms_sync.review_required",
            subject_type="pms_sync_review",
            subject_id=review.id,
            actor=actor_of(connection),
            data=data,
            idempotency_key=f"{item_key(connection, item)}:review:{item.content_hash[:16]}",
        )


def link_changed(connection, link_id, *, patient_id, previous_patient_id, change: str, key: str | None) -> None:
    emit(
        organization=connection.organization_id,
        type="pms_patient.link_changed",
        subject_type="pms_patient",
        subject_id=link_id,
        actor=actor_of(connection),
        data={
            "connectionId": str(connection.id),
            "change": change,
            "patientId": str(patient_id) if patient_id else None,
            "previousPatientId": str(previous_patient_id) if previous_patient_id else None,
        },
        idempotency_key=key,
    )


# --- patients ------------------------------------------------------------------------------------------------------


def phone_key(phone: str | None) -> str:
    """A phone number's digits, "00" read as "+" (patients.patient_match compares numbers the same way)."""
    digits = "".join(ch for ch in phone or "" if ch.isdigit())
    return digits[2:] if digits.startswith("00") else digits


def _matches(organization_id, items: list[Item]) -> tuple[dict, dict]:
    """Existing CRM patients by upper-case e-mail and by phone digits (one query; expression indexes)."""
    emails = {item.content["email"].upper() for item in items if item.content["email"]}
    keys = {phone_key(item.content["phone"]) for item in items} - {""}
    digits = keys | {f"00{key}" for key in keys}
    if not emails and not digits:
        return {}, {}
    # Merged-away rows are skipped here, not in SQL: a merged_into condition lets the planner, with statistics not
    # yet updated during a bulk load, scan every patient of the practice instead of the two expression indexes.
    rows = (
        Patient.objects.for_org(organization_id)
        .annotate(email_upper=Upper("email"), mobile_digits=digits_of("phone_mobile"))
        .filter(Q(email_upper__in=emails) | Q(mobile_digits__in=digits))
        .order_by("archived_at", "created_at", "id")
    )
    by_email, by_phone = {}, {}
    for patient in rows:
        if patient.merged_into_id is not None:
            continue
        if patient.email_upper:
            by_email.setdefault(patient.email_upper, patient)
        if patient.mobile_digits:
            by_phone.setdefault(phone_key(patient.mobile_digits), patient)
    return by_email, by_phone


def apply_patients(connection: PmsConnection, items: list[Item], *, live: bool) -> Outcome:
    org = connection.organization_id
    outcome = Outcome()
    items = _latest_per_id(items)
    now = timezone.now()
    links = {
        link.provider_patient_id: link
        for link in PmsPatientLink.objects.for_org(org)
        .select_for_update(of=("self",))
        .filter(connection=connection, provider_patient_id__in=[item.id for item in items])
    }
    unlinked = [item for item in items if item.id not in links]
    by_email, by_phone = _matches(org, unlinked) if unlinked else ({}, {})

    new_patients, new_links, link_updates, patient_updates = [], [], [], {}
    created_ids, matched_ids, changed = set(), set(), {}
    for item in items:
        link = links.get(item.id)
        if link is not None:
            if item.revision < link.revision:
                outcome.counts["stale"] += 1
            elif item.revision == link.revision:
                if item.content_hash == link.content_hash:
                    outcome.counts["unchanged"] += 1
                else:
                    outcome.counts["held"] += 1
                    _hold(connection, item, live=live, patient_id=link.patient_id)
                    if link.sync_state != SyncState.REVIEW:
                        link.sync_state = SyncState.REVIEW
                        link_updates.append(link)
            else:
                if item.content_hash == link.content_hash:
                    outcome.counts["unchanged"] += 1  # a revision-only bump: nothing applied, nothing recorded
                else:
                    outcome.counts["updated"] += 1
                    patient_updates[link.patient_id] = item
                link.revision, link.content_hash, link.last_synced_at = item.revision, item.content_hash, now
                link_updates.append(link)
            continue
        values = _patient_values(item.content)
        digits = phone_key(item.content["phone"])
        match = (by_email.get(item.content["email"].upper()) if item.content["email"] else None) or (
            by_phone.get(digits) if digits else None
        )
        if match is not None:
            outcome.counts["matched"] += 1
            matched_ids.add(item.id)
            lacking = {name: value for name, value in values.items() if value and not getattr(match, name)}
            if lacking:
                for name, value in lacking.items():
                    setattr(match, name, value)
                patient_updates.setdefault(match.id, None)
                changed.setdefault(match.id, set()).update(lacking)
                patient_updates[match.id] = patient_updates[match.id] or match
            patient_id = match.id
        else:
            patient = Patient(id=uuid.uuid4(), organization_id=org, status=Status.PATIENT, **values)
            new_patients.append(patient)
            created_ids.add(item.id)
            outcome.counts["created"] += 1
            patient_id = patient.id
            # Two new PMS patients of one page with the same e-mail or phone are one CRM patient.
            if item.content["email"]:
                by_email[item.content["email"].upper()] = patient
            if digits:
                by_phone[digits] = patient
        new_links.append(
            PmsPatientLink(
                id=uuid.uuid4(),
                organization_id=org,
                connection=connection,
                provider_patient_id=item.id,
                patient_id=patient_id,
                revision=item.revision,
                content_hash=item.content_hash,
                linked_at=now,
                last_synced_at=now,
            )
        )

    if new_patients:
        Patient.objects.bulk_create(new_patients, batch_size=1000)
    _write_patient_updates(org, patient_updates, changed, now)
    if new_links:
        PmsPatientLink.objects.bulk_create(new_links, batch_size=1000)
    if link_updates:
        PmsPatientLink.objects.for_org(org).bulk_update(
            link_updates, ["revision", "content_hash", "last_synced_at", "sync_state", "updated_at"]
        )
    if live:
        _patient_events(connection, items, links, new_links, created_ids, patient_updates, changed)
    return outcome


def _write_patient_updates(org, patient_updates: dict, changed: dict, now) -> None:
    """patient_updates: patient id → the newer Item to apply in full, or the matched Patient already filled in."""
    if not patient_updates:
        return
    items = {pid: item for pid, item in patient_updates.items() if isinstance(item, Item)}
    rows = list(Patient.objects.for_org(org).filter(id__in=list(items))) if items else []
    for patient in rows:
        for name, value in _patient_values(items[patient.id].content).items():
            if getattr(patient, name) != value:
                setattr(patient, name, value)
                changed.setdefault(patient.id, set()).add(name)
    rows += [p for p in patient_updates.values() if isinstance(p, Patient)]
    rows = [p for p in rows if changed.get(p.id)]
    for patient in rows:
        patient.updated_at = now
    if rows:
        Patient.objects.for_org(org).bulk_update(rows, [*PATIENT_FIELDS.values(), "updated_at"])


def _patient_events(connection, items, links, new_links, created_ids, patient_updates, changed) -> None:
    actor = actor_of(connection)
    by_item = {link.provider_patient_id: link for link in new_links}
    wire = {field: PATIENT_WIRE[key] for key, field in PATIENT_FIELDS.items()}
    for item in items:
        key = item_key(connection, item)
        link = by_item.get(item.id)
        if link is not None:
            if item.id in created_ids:
                emit(
                    organization=connection.organization_id,
                    type="patient.created",
                    subject_type="patient",
                    subject_id=link.patient_id,
                    actor=actor,
                    data={"status": Status.PATIENT},
                    idempotency_key=key,
                )
            link_changed(
                connection,
                link.id,
                patient_id=link.patient_id,
                previous_patient_id=None,
                change="created",
                key=f"{key}:link",
            )
            continue
        existing = links.get(item.id)
        if (
            existing is not None
            and patient_updates.get(existing.patient_id) is item
            and changed.get(existing.patient_id)
        ):
            emit(
                organization=connection.organization_id,
                type="patient.updated",
                subject_type="patient",
                subject_id=existing.patient_id,
                actor=actor,
                action="pms_sync",
                changed_fields=sorted(wire[name] for name in changed[existing.patient_id]),
                idempotency_key=key,
            )


# --- practitioners and appointments --------------------------------------------------------------------------------


def _practitioners(connection, items: list[Item], outcome: Outcome) -> dict:
    """The CRM practitioner of each PMS practitioner id the items name; unknown ones are created (bulk)."""
    org = connection.organization_id
    wanted = {item.content["practitioner_id"]: item.content["practitioner_name"] for item in items}
    known = dict(
        PmsPractitionerLink.objects.for_org(org)
        .filter(connection=connection, provider_practitioner_id__in=list(wanted))
        .values_list("provider_practitioner_id", "practitioner_id")
    )
    missing = [pid for pid in wanted if pid not in known]
    if missing:
        made = [
            Practitioner(id=uuid.uuid4(), organization_id=org, name=(wanted[pid] or f"PMS practitioner {pid}")[:200])
            for pid in missing
        ]
        Practitioner.objects.bulk_create(made)
        PmsPractitionerLink.objects.bulk_create(
            [
                PmsPractitionerLink(
                    organization_id=org, connection=connection, provider_practitioner_id=pid, practitioner_id=p.id
                )
                for pid, p in zip(missing, made, strict=True)
            ],
            ignore_conflicts=True,
        )
        known = dict(
            PmsPractitionerLink.objects.for_org(org)
            .filter(connection=connection, provider_practitioner_id__in=list(wanted))
            .values_list("provider_practitioner_id", "practitioner_id")
        )
        # A concurrent run that linked the same PMS practitioner first: ours is not kept.
        used = set(known.values())
        Practitioner.objects.for_org(org).filter(id__in=[p.id for p in made if p.id not in used]).delete()
        outcome.counts["practitioners_created"] += sum(1 for p in made if p.id in used)
    return known


def _appointment_values(content: dict, patient_id, practitioner_id) -> dict:
    return {
        "patient_id": patient_id,
        "practitioner_id": practitioner_id,
        "starts_at": _instant(content["starts_at"]),
        "ends_at": _instant(content["ends_at"]),
        "status": content["status"],
    }


def apply_appointments(connection: PmsConnection, items: list[Item], *, live: bool) -> Outcome:
    org = connection.organization_id
    outcome = Outcome()
    items = _latest_per_id(items)
    now = timezone.now()
    patients = dict(
        PmsPatientLink.objects.for_org(org)
        .filter(connection=connection, provider_patient_id__in={item.content["patient_id"] for item in items})
        .values_list("provider_patient_id", "patient_id")
    )
    usable = []
    for item in items:
        if item.content["patient_id"] in patients:
            usable.append(item)
        else:
            outcome.skip("patient_not_linked", item.id)
    practitioners = _practitioners(connection, usable, outcome) if usable else {}
    links = {
        link.provider_appointment_id: link
        for link in PmsAppointmentLink.objects.for_org(org)
        .select_for_update(of=("self",))
        .filter(connection=connection, provider_appointment_id__in=[item.id for item in usable])
    }
    new_rows, updates, link_updates = [], [], []
    for item in usable:
        values = _appointment_values(
            item.content, patients[item.content["patient_id"]], practitioners[item.content["practitioner_id"]]
        )
        link = links.get(item.id)
        if link is None:
            new_rows.append((item, Appointment(id=uuid.uuid4(), organization_id=org, status_changed_at=now, **values)))
        elif item.revision < link.revision:
            outcome.counts["stale"] += 1
        elif item.revision == link.revision:
            if item.content_hash == link.content_hash:
                outcome.counts["unchanged"] += 1
            else:
                outcome.counts["held"] += 1
                _hold(connection, item, live=live, appointment_id=link.appointment_id)
                link.sync_state = SyncState.REVIEW
                link_updates.append(link)
        else:
            if item.content_hash != link.content_hash:
                updates.append((item, link, values))
            else:
                outcome.counts["unchanged"] += 1
            link.revision, link.content_hash, link.last_synced_at = item.revision, item.content_hash, now
            link_updates.append(link)

    created = _insert_appointments(connection, new_rows, outcome, now)
    changed = _update_appointments(connection, updates, outcome, now)
    applied_updates = {item.id for item, _, _ in updates if item.id in changed}
    link_updates = [
        link
        for link in link_updates
        if link.provider_appointment_id in applied_updates
        or link.provider_appointment_id not in {item.id for item, _, _ in updates}
    ]
    if link_updates:
        PmsAppointmentLink.objects.for_org(org).bulk_update(
            link_updates, ["revision", "content_hash", "last_synced_at", "sync_state", "updated_at"]
        )
    if live:
        actor = actor_of(connection)
        for item, appointment in created:
            emit(
                organization=org,
                type="appointment.created",
                subject_type="appointment",
                subject_id=appointment.id,
                actor=actor,
                data={"patientId": str(appointment.patient_id), "status": appointment.status},
                action="pms_sync",
                idempotency_key=item_key(connection, item),
            )
        for item, link, _ in updates:
            if changed.get(item.id):
                emit(
                    organization=org,
                    type="appointment.updated",
                    subject_type="appointment",
                    subject_id=link.appointment_id,
                    actor=actor,
                    action="pms_sync",
                    changed_fields=changed[item.id],
                    idempotency_key=item_key(connection, item),
                )
    return outcome


def _insert_appointments(connection, new_rows: list, outcome: Outcome, now) -> list:
    """INSERT … ON CONFLICT DO NOTHING: a PMS appointment that overlaps another of the practitioner's (the diary's
    exclusion constraint) is not mirrored (skipped, appointment_clash); the others are, with their links."""
    if not new_rows:
        return []
    org = connection.organization_id
    Appointment.objects.bulk_create([row for _, row in new_rows], ignore_conflicts=True, batch_size=1000)
    stored = set(
        Appointment.objects.for_org(org).filter(id__in=[row.id for _, row in new_rows]).values_list("id", flat=True)
    )
    created, links = [], []
    for item, row in new_rows:
        if row.id not in stored:
            outcome.skip("appointment_clash", item.id)
            continue
        outcome.counts["created"] += 1
        created.append((item, row))
        links.append(
            PmsAppointmentLink(
                organization_id=org,
                connection=connection,
                provider_appointment_id=item.id,
                appointment_id=row.id,
                revision=item.revision,
                content_hash=item.content_hash,
                last_synced_at=now,
            )
        )
    PmsAppointmentLink.objects.bulk_create(links, batch_size=1000)
    return created


def _update_appointments(connection, updates: list, outcome: Outcome, now) -> dict:
    """Newer revisions of mirrored appointments; returns item id → changed wire fields (a clash: skipped)."""
    if not updates:
        return {}
    org = connection.organization_id
    rows = {
        a.id: a for a in Appointment.objects.for_org(org).filter(id__in=[link.appointment_id for _, link, _ in updates])
    }
    changed, dirty = {}, []
    for item, link, values in updates:
        row = rows.get(link.appointment_id)
        if row is None:
            outcome.skip("appointment_missing", item.id)
            continue
        fields = [name for name, value in values.items() if getattr(row, name) != value]
        for name in fields:
            setattr(row, name, values[name])
        if "status" in fields:
            row.status_changed_at = now
        row.updated_at = now
        changed[item.id] = sorted(APPOINTMENT_WIRE[name] for name in fields)
        dirty.append((item, row))
    names = ["patient_id", "practitioner_id", "starts_at", "ends_at", "status", "status_changed_at", "updated_at"]
    try:
        with transaction.atomic():
            Appointment.objects.for_org(org).bulk_update([row for _, row in dirty], names)
    except IntegrityError:  # one of them clashes in the diary: row by row, the clashing ones skipped
        for item, row in dirty:
            try:
                with transaction.atomic():
                    Appointment.objects.for_org(org).bulk_update([row], names)
            except IntegrityError:
                outcome.skip("appointment_clash", item.id)
                changed.pop(item.id, None)
    outcome.counts["updated"] += len(changed)
    return changed


def apply(connection: PmsConnection, kind: str, items: list[Item], *, live: bool) -> Outcome:
    if kind == ItemKind.PATIENT:
        return apply_patients(connection, items, live=live)
    return apply_appointments(connection, items, live=live)


__all__ = ["Outcome", "ReviewStatus", "apply", "apply_appointments", "apply_patients", "link_changed"]
