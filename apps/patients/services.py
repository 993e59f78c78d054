"""Writes of the patients area. Each runs in one transaction, records its events in the outbox and its timeline
entries, and refuses what the contract refuses (merged records, under-called leads without a reason)."""

from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from apps.core.errors import NotFound, ValidationFailed
from apps.core.naming import to_camel as camel
from apps.core.writes import assign_fields, save_unique
from apps.events.services import Actor, PendingEvent, emit, emit_many
from apps.patients import hooks
from apps.patients.errors import (
    ArchiveReasonRequired,
    MergeNotAllowed,
    PatientArchived,
    PatientMerged,
    SavedViewNameTaken,
    TagNameTaken,
)
from apps.patients.models import Activity, LeadSource, MarketingConsent, Patient, PatientTag, SavedView, Status, Tag

MIN_CONTACT_ATTEMPTS_BEFORE_SILENT_ARCHIVE = 5

# Wire ids of related records → the model's relation attribute.
RELATIONS = {
    "location_id": "location",
    "lead_source_id": "lead_source",
    "referred_by_patient_id": "referred_by_patient",
    "default_price_list_id": "default_price_list",
    "dentist_practitioner_id": "dentist_practitioner",
    "hygienist_practitioner_id": "hygienist_practitioner",
}
OPT_OUT_FIELD = {"sms": "sms_opt_out", "email": "email_opt_out", "whatsapp": "whatsapp_opt_out"}


def _actor(user) -> Actor:
    return Actor.user(user) if user is not None else Actor.system()


def _activity(*, organization, patient_id, kind: str, user, summary: str = "", data: dict | None = None) -> Activity:
    return Activity(
        organization_id=organization.pk,
        patient_id=patient_id,
        kind=kind,
        summary=summary,
        data=data or {},
        actor=user,
    )


def _patient_event(*, organization, user, patient_id, type: str = "patient.updated", **event) -> None:
    emit(
        organization=organization, type=type, subject_type="patient", subject_id=patient_id, actor=_actor(user), **event
    )


TIMELINE_KINDS = frozenset(Activity.Kind.values)


def timeline_record(
    *, organization, user, patient_id, kind: str, summary: str = "", data: dict | None = None
) -> Activity:
    """One entry on a patient's timeline: the public way every area writes there. Call it inside the transaction of
    the change it records (the entry commits or rolls back with it). `patient_id` must be a patient of
    `organization` (the caller read it through a tenant-scoped record); `kind` one of Activity.Kind; `data` ids and
    the names of stages and treatments, never free text a user typed (that goes, where the timeline shows it, in
    `summary`). `user` is the actor, None for the system."""
    if kind not in TIMELINE_KINDS:
        raise ValueError(f"unknown timeline kind {kind!r}")
    entry = _activity(
        organization=organization, patient_id=patient_id, kind=kind, user=user, summary=summary, data=data
    )
    entry.save(force_insert=True)
    return entry


def timeline_record_many(*, organization, user, kind: str, entries: list[tuple]) -> int:
    """timeline_record for many patients at once, in one INSERT: `entries` are (patient_id, data) pairs, with the
    same rules (a campaign's messages, one entry per patient)."""
    if kind not in TIMELINE_KINDS:
        raise ValueError(f"unknown timeline kind {kind!r}")
    rows = [
        _activity(organization=organization, patient_id=patient_id, kind=kind, user=user, data=data)
        for patient_id, data in entries
    ]
    return len(Activity.objects.bulk_create(rows))


def _ensure_not_merged(patient: Patient) -> None:
    if patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)


def _require_contact(patient: Patient) -> None:
    if not (patient.email or patient.phone_mobile):
        raise ValidationFailed(
            "email: at least one of email or phoneMobile is required",
            details={"fields": {"email": ["at least one of email or phoneMobile is required"]}},
        )


def _check_referrer(patient: Patient) -> None:
    if patient.referred_by_patient_id is not None and patient.referred_by_patient_id == patient.id:
        raise ValidationFailed.for_field("referredByPatientId", "a patient cannot refer themselves")


@transaction.atomic
def patient_create(*, organization, user, data: dict[str, Any]) -> Patient:
    patient = Patient(organization=organization)
    assign_fields(patient, data, relations=RELATIONS)
    _require_contact(patient)
    patient.save()
    timeline_record(organization=organization, user=user, patient_id=patient.id, kind=Activity.Kind.CREATED)
    _patient_event(
        organization=organization,
        user=user,
        patient_id=patient.id,
        type="patient.created",
        data={"status": patient.status},
    )
    return patient


@transaction.atomic
def patient_update(*, organization, user, patient: Patient, data: dict[str, Any], locked: bool = False) -> Patient:
    """`locked`: the caller read `patient` with select_for_update in the current transaction; it is not read again."""
    if not locked:
        patient = Patient.objects.for_org(organization).select_for_update().get(id=patient.id)
    _ensure_not_merged(patient)
    if "status" in data and patient.archived_at is not None and data["status"] != patient.status:
        raise PatientArchived()
    previous_status = patient.status
    changed = assign_fields(patient, data, relations=RELATIONS)
    _require_contact(patient)
    _check_referrer(patient)
    if not changed:
        return patient
    patient.save()
    if "status" in changed:
        timeline_record(
            organization=organization,
            user=user,
            patient_id=patient.id,
            kind=Activity.Kind.STATUS_CHANGED,
            data={"from": previous_status, "to": patient.status},
        )
    _patient_event(
        organization=organization, user=user, patient_id=patient.id, action="updated", changed_fields=changed
    )
    return patient


@transaction.atomic
def patient_archive(*, organization, user, patient: Patient, reason: str | None) -> Patient:
    patient = Patient.objects.for_org(organization).select_for_update().get(id=patient.id)
    _ensure_not_merged(patient)
    if patient.archived_at is not None:
        return patient  # repeating is harmless
    if (
        not reason
        and patient.status == Status.LEAD
        and patient.contact_attempts < MIN_CONTACT_ATTEMPTS_BEFORE_SILENT_ARCHIVE
    ):
        raise ArchiveReasonRequired(details={"contactAttempts": patient.contact_attempts})
    patient.status_before_archive = patient.status
    patient.status = Status.ARCHIVED
    patient.archived_at = timezone.now()
    patient.save(update_fields=["status_before_archive", "status", "archived_at", "updated_at"])
    timeline_record(
        organization=organization, user=user, patient_id=patient.id, kind=Activity.Kind.ARCHIVED, summary=reason or ""
    )
    _patient_event(
        organization=organization,
        user=user,
        patient_id=patient.id,
        type="patient.archived",
        data={"reasonGiven": bool(reason)},
    )
    return patient


@transaction.atomic
def patient_unarchive(*, organization, user, patient: Patient) -> Patient:
    patient = Patient.objects.for_org(organization).select_for_update().get(id=patient.id)
    _ensure_not_merged(patient)
    if patient.archived_at is None:
        return patient
    patient.status = patient.status_before_archive or Status.LEAD
    patient.status_before_archive = ""
    patient.archived_at = None
    patient.save(update_fields=["status_before_archive", "status", "archived_at", "updated_at"])
    timeline_record(organization=organization, user=user, patient_id=patient.id, kind=Activity.Kind.UNARCHIVED)
    _patient_event(
        organization=organization,
        user=user,
        patient_id=patient.id,
        action="unarchived",
        changed_fields=["status", "archivedAt"],
    )
    return patient


@transaction.atomic
def patient_record_contact_attempt(*, organization, user, patient: Patient, channel: str, outcome: str) -> Patient:
    """A call or message attempt on a lead: counted for the archive rule and kept on the timeline."""
    patient = Patient.objects.for_org(organization).select_for_update().get(id=patient.id)
    _ensure_not_merged(patient)
    patient.contact_attempts += 1
    patient.save(update_fields=["contact_attempts", "updated_at"])
    kind = Activity.Kind.CALL if channel == "phone" else Activity.Kind.MESSAGE
    timeline_record(
        organization=organization,
        user=user,
        patient_id=patient.id,
        kind=kind,
        data={"channel": channel, "outcome": outcome, "attempt": patient.contact_attempts},
    )
    _patient_event(
        organization=organization,
        user=user,
        patient_id=patient.id,
        action="contact_attempted",
        changed_fields=["contactAttempts"],
    )
    return patient


@transaction.atomic
def patient_note_add(*, organization, user, patient: Patient, body: str) -> Activity:
    """A note on the patient's timeline; the body is the entry's summary (no event: the record itself is unchanged).
    The row lock keeps a concurrent merge from leaving the note behind on the duplicate."""
    patient = Patient.objects.for_org(organization).select_for_update().get(id=patient.id)
    _ensure_not_merged(patient)
    return timeline_record(
        organization=organization, user=user, patient_id=patient.id, kind=Activity.Kind.NOTE, summary=body
    )


@transaction.atomic
def patient_erase(*, organization, patient: Patient) -> int:
    """Right to erasure: the patient, every record merged into it, and everything hanging off them, in one
    transaction. Other areas take part through hooks.on_erase. Returns the recordings scheduled for deletion."""
    ids = [patient.id]
    frontier = [patient.id]
    while frontier:  # duplicates merged into this record are the same person
        frontier = list(
            Patient.objects.for_org(organization).filter(merged_into_id__in=frontier).values_list("id", flat=True)
        )
        ids.extend(frontier)
    # Locked in id order before anything hanging off them is deleted (see _bulk_targets).
    list(Patient.objects.for_org(organization).select_for_update().filter(id__in=ids).order_by("id").values("id"))
    scheduled = hooks.run_erasure_hooks(organization=organization, patient_ids=ids)
    Patient.objects.for_org(organization).filter(referred_by_patient_id__in=ids).update(referred_by_patient=None)
    Patient.objects.for_org(organization).filter(id__in=ids).update(merged_into=None)
    Patient.objects.for_org(organization).filter(id__in=ids).delete()
    return scheduled


# Fields filled on the survivor from the duplicate when the survivor has none.
MERGE_FILLABLE = (
    "title",
    "last_name",
    "preferred_name",
    "ethnicity_code",
    "date_of_birth",
    "gender",
    "fiscal_code",
    "email",
    "phone_mobile",
    "phone_other",
    "address_line1",
    "address_line2",
    "city",
    "province",
    "postal_code",
    "country",
    "language",
    "preferred_contact_method",
    "preferred_contact_time",
    "medical_alert",
    "note",
    "location_id",
    "lead_source_id",
    "referred_by_patient_id",
    "default_price_list_id",
    "dentist_practitioner_id",
    "hygienist_practitioner_id",
)


@transaction.atomic
def patient_merge(*, organization, user, survivor: Patient, duplicate: Patient) -> Patient:
    """Fold `duplicate` into `survivor`. The survivor keeps its values and gains what it lacks; tags are unioned,
    opt-outs kept (an opt-out on either record stands), contact attempts added, timeline and consents re-pointed.
    The duplicate then reports mergedIntoPatientId and refuses changes."""
    if survivor.id == duplicate.id:
        raise MergeNotAllowed("A patient cannot be merged into itself.")
    locked = {
        p.id: p
        for p in Patient.objects.for_org(organization)
        .select_for_update()
        .filter(id__in=[survivor.id, duplicate.id])
        .order_by("id")
    }
    survivor, duplicate = locked[survivor.id], locked[duplicate.id]
    _ensure_not_merged(survivor)
    _ensure_not_merged(duplicate)

    changed = []
    for name in MERGE_FILLABLE:
        if getattr(survivor, name) in (None, "") and getattr(duplicate, name) not in (None, ""):
            setattr(survivor, name, getattr(duplicate, name))
            changed.append(camel(name))
    if survivor.referred_by_patient_id == duplicate.id:  # referred by the record it absorbs: take its referrer
        survivor.referred_by_patient_id = duplicate.referred_by_patient_id
    if survivor.referred_by_patient_id == survivor.id:
        survivor.referred_by_patient_id = None
    for flag in OPT_OUT_FIELD.values():
        if getattr(duplicate, flag) and not getattr(survivor, flag):
            setattr(survivor, flag, True)
            changed.append(camel(flag))
    if duplicate.custom_fields:
        merged_custom = {**duplicate.custom_fields, **survivor.custom_fields}
        if merged_custom != survivor.custom_fields:
            survivor.custom_fields = merged_custom
            changed.append("customFields")
    if duplicate.contact_attempts:
        survivor.contact_attempts += duplicate.contact_attempts
        changed.append("contactAttempts")

    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO patients_patienttag (id, organization_id, patient_id, tag_id, created_at, updated_at)
            SELECT gen_random_uuid(), organization_id, %s, tag_id, now(), now()
            FROM patients_patienttag WHERE organization_id = %s AND patient_id = %s
            ON CONFLICT (organization_id, patient_id, tag_id) DO NOTHING
            """,
            [survivor.id, organization.pk, duplicate.id],
        )
        if cursor.rowcount:
            changed.append("tags")
    Activity.objects.for_org(organization).filter(patient=duplicate).update(patient=survivor)
    MarketingConsent.objects.for_org(organization).filter(patient=duplicate).update(patient=survivor)
    Patient.objects.for_org(organization).filter(referred_by_patient=duplicate).exclude(id=survivor.id).update(
        referred_by_patient=survivor
    )
    hooks.run_merge_hooks(organization=organization, survivor=survivor, duplicate=duplicate)

    survivor.save()
    duplicate.merged_into = survivor
    duplicate.merged_at = timezone.now()
    duplicate.save(update_fields=["merged_into", "merged_at", "updated_at"])
    timeline_record(
        organization=organization,
        user=user,
        patient_id=survivor.id,
        kind=Activity.Kind.MERGED,
        data={"duplicatePatientId": str(duplicate.id)},
    )
    _patient_event(
        organization=organization, user=user, patient_id=survivor.id, action="merged", changed_fields=changed
    )
    _patient_event(
        organization=organization,
        user=user,
        patient_id=duplicate.id,
        action="merged_into",
        changed_fields=["mergedIntoPatientId"],
    )
    return survivor


# --- bulk operations: set-based SQL, one statement per step whatever the number of ids -----------------------


@dataclass
class BulkResult:
    updated: int = 0
    skipped: list[dict] = field(default_factory=list)


def _bulk_targets(*, organization, patient_ids) -> tuple[list, list[dict]]:
    """(ids of the practice that may change, skipped merged ones). Ids of other practices are ignored. The rows are
    locked in id order, as every multi-patient write locks them before touching their tags: the tag triggers lock
    the same patients' facets, and a different order would deadlock with a merge or an erasure."""
    rows = (
        Patient.objects.for_org(organization)
        .select_for_update()
        .filter(id__in=patient_ids)
        .order_by("id")
        .values_list("id", "merged_into_id")
    )
    eligible, skipped = [], []
    for patient_id, merged_into_id in rows:
        if merged_into_id is None:
            eligible.append(patient_id)
        else:
            skipped.append({"patient_id": patient_id, "merged_into_patient_id": merged_into_id})
    return eligible, skipped


def _bulk_events(*, organization, user, patient_ids, type: str, **kwargs) -> None:
    emit_many(
        organization=organization,
        actor=_actor(user),
        events=[PendingEvent(type, "patient", patient_id, **kwargs) for patient_id in patient_ids],
    )


@transaction.atomic
def patients_bulk_tags(*, organization, user, patient_ids, add_tag_ids, remove_tag_ids) -> BulkResult:
    eligible, skipped = _bulk_targets(organization=organization, patient_ids=patient_ids)
    known = set(
        Tag.objects.for_org(organization).filter(id__in=[*add_tag_ids, *remove_tag_ids]).values_list("id", flat=True)
    )
    for field_name, ids in (("addTagIds", add_tag_ids), ("removeTagIds", remove_tag_ids)):
        unknown = [str(i) for i in ids if i not in known]
        if unknown:
            raise ValidationFailed(
                f"{field_name}: tags do not exist in this practice",
                details={"fields": {field_name: [f"{i} does not exist in this practice" for i in unknown]}},
            )
    changed: set = set()
    if eligible:
        with connection.cursor() as cursor:
            if add_tag_ids:
                cursor.execute(
                    """
                    INSERT INTO patients_patienttag (id, organization_id, patient_id, tag_id, created_at, updated_at)
                    SELECT gen_random_uuid(), %s, p, t, now(), now()
                    FROM unnest(%s::uuid[]) AS p CROSS JOIN unnest(%s::uuid[]) AS t
                    ON CONFLICT (organization_id, patient_id, tag_id) DO NOTHING
                    RETURNING patient_id
                    """,
                    [organization.pk, eligible, list(add_tag_ids)],
                )
                changed.update(row[0] for row in cursor.fetchall())
            if remove_tag_ids:
                cursor.execute(
                    """
                    DELETE FROM patients_patienttag
                    WHERE organization_id = %s AND patient_id = ANY(%s::uuid[]) AND tag_id = ANY(%s::uuid[])
                    RETURNING patient_id
                    """,
                    [organization.pk, eligible, list(remove_tag_ids)],
                )
                changed.update(row[0] for row in cursor.fetchall())
    if changed:
        Patient.objects.for_org(organization).filter(id__in=changed).update(updated_at=timezone.now())
        _bulk_events(
            organization=organization,
            user=user,
            patient_ids=sorted(changed),
            type="patient.updated",
            action="tags_changed",
            changed_fields=("tags",),
        )
    return BulkResult(updated=len(changed), skipped=skipped)


@transaction.atomic
def patients_bulk_location(*, organization, user, patient_ids, location) -> BulkResult:
    eligible, skipped = _bulk_targets(organization=organization, patient_ids=patient_ids)
    changed = []
    if eligible:
        location_id = location.pk if location is not None else None
        with connection.cursor() as cursor:
            cursor.execute(
                """
                UPDATE patients_patient SET location_id = %s, updated_at = now()
                WHERE organization_id = %s AND id = ANY(%s::uuid[]) AND location_id IS DISTINCT FROM %s
                RETURNING id
                """,
                [location_id, organization.pk, eligible, location_id],
            )
            changed = [row[0] for row in cursor.fetchall()]
    _bulk_events(
        organization=organization,
        user=user,
        patient_ids=changed,
        type="patient.updated",
        action="updated",
        changed_fields=("locationId",),
    )
    return BulkResult(updated=len(changed), skipped=skipped)


@transaction.atomic
def patients_bulk_archive(*, organization, user, patient_ids, reason: str | None) -> BulkResult:
    """All or nothing: with an under-called lead in the selection and no reason, nothing is archived."""
    eligible, skipped = _bulk_targets(organization=organization, patient_ids=patient_ids)
    if not reason:
        under_called = list(
            Patient.objects.for_org(organization)
            .filter(
                id__in=eligible,
                archived_at__isnull=True,
                status=Status.LEAD,
                contact_attempts__lt=MIN_CONTACT_ATTEMPTS_BEFORE_SILENT_ARCHIVE,
            )
            .order_by("id")
            .values_list("id", flat=True)
        )
        if under_called:
            raise ArchiveReasonRequired(details={"underCalledLeads": [str(i) for i in under_called]})
    archived = []
    if eligible:
        with connection.cursor() as cursor:
            cursor.execute(
                """
                UPDATE patients_patient
                SET status_before_archive = status, status = 'archived', archived_at = now(), updated_at = now()
                WHERE organization_id = %s AND id = ANY(%s::uuid[]) AND archived_at IS NULL
                  AND merged_into_id IS NULL
                RETURNING id
                """,
                [organization.pk, eligible],
            )
            archived = sorted(row[0] for row in cursor.fetchall())
    Activity.objects.bulk_create(
        [
            _activity(
                organization=organization, patient_id=i, kind=Activity.Kind.ARCHIVED, user=user, summary=reason or ""
            )
            for i in archived
        ]
    )
    _bulk_events(
        organization=organization,
        user=user,
        patient_ids=archived,
        type="patient.archived",
        data={"reasonGiven": bool(reason)},
    )
    return BulkResult(updated=len(archived), skipped=skipped)


# --- tags ----------------------------------------------------------------------------------------------------


def tag_create(*, organization, name: str, color: str = "") -> Tag:
    return save_unique(Tag(organization=organization, name=name.strip(), color=color), TagNameTaken)


def tag_update(*, organization, tag: Tag, data: dict) -> Tag:
    for key, value in data.items():
        setattr(tag, key, value.strip() if key == "name" else value)
    return save_unique(tag, TagNameTaken)


@transaction.atomic
def tag_delete(*, organization, tag: Tag) -> None:
    PatientTag.objects.for_org(organization).filter(tag=tag).delete()
    tag.delete()


# --- marketing consent ----------------------------------------------------------------------------------------


@transaction.atomic
def consent_record(*, organization, user, patient: Patient, channel: str, status: str, source: str, evidence: str):
    """Record a consent change; the channel's opt-out flag follows it (withdrawn → opted out)."""
    patient = Patient.objects.for_org(organization).select_for_update().get(id=patient.id)
    _ensure_not_merged(patient)
    consent = MarketingConsent.objects.create(
        organization=organization,
        patient=patient,
        channel=channel,
        status=status,
        source=source,
        evidence=evidence,
        recorded_at=timezone.now(),
        recorded_by=user,
    )
    flag = OPT_OUT_FIELD[channel]
    opted_out = status == MarketingConsent.State.WITHDRAWN
    timeline_record(
        organization=organization,
        user=user,
        patient_id=patient.id,
        kind=Activity.Kind.CONSENT,
        data={"channel": channel, "status": status, "source": source},
    )
    if getattr(patient, flag) != opted_out:
        setattr(patient, flag, opted_out)
        patient.save(update_fields=[flag, "updated_at"])
        _patient_event(
            organization=organization,
            user=user,
            patient_id=patient.id,
            action="consent_changed",
            changed_fields=[camel(flag)],
        )
    return consent


# --- saved views ----------------------------------------------------------------------------------------------


def saved_view_create(*, organization, user, data: dict) -> SavedView:
    return save_unique(SavedView(organization=organization, owner=user, **data), SavedViewNameTaken)


def saved_view_update(*, organization, view: SavedView, data: dict) -> SavedView:
    for key, value in data.items():
        setattr(view, key, value)
    return save_unique(view, SavedViewNameTaken)


def saved_view_delete(*, organization, view: SavedView) -> None:
    deleted, _ = SavedView.objects.for_org(organization).filter(id=view.id).delete()
    if not deleted:
        raise NotFound()


def lead_source_named(organization, name: str) -> LeadSource:
    """The practice's active lead source of this name (any case), made when it has none: the source a public surface
    (referral page, chat widget) files its new leads under. Callers serialise concurrent first uses themselves."""
    sources = LeadSource.objects.for_org(organization).filter(archived_at__isnull=True)
    found = sources.filter(name__iexact=name).order_by("created_at").first()
    return found or LeadSource.objects.create(organization=organization, name=name)
