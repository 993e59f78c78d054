"""Patients in bulk for apps.transfer: the import row rules and set-based upsert, the export rows, and the erasure of
a closing practice's patients in batches.

`clean_import_row` checks one row the way the patients area checks a created patient (first name, an e-mail or a
mobile number, a real date of birth not in the future, the contract's lengths and enums) and normalises it: e-mail
lower-cased and checked, phone numbers reduced to "+" and digits ("00" read as "+"), dates as YYYY-MM-DD or the UK
DD/MM/YYYY. It answers the clean values and the problems as (field, problem) pairs.

`import_patients` writes one batch of clean rows in one statement (INSERT ... ON CONFLICT on the practice's unique
(external source, external id)): a row whose external id is new creates a patient, a known one updates the fields
the import maps, an unchanged one is left alone. The search vocabulary, postings and list facets are kept by the
patients table's own statement triggers, as for any write. No event, timeline entry or automation per row: an import
is historical data, like the PMS's historical import (emission rule 1).
"""

import datetime
import re
import uuid
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils import timezone

from apps.patients.models import SETTABLE_STATUSES, Gender, LeadSource, Patient, Status

# The fields an import may fill: wire name → (patient attribute, max length or None).
IMPORT_FIELDS: dict[str, tuple[str, int | None]] = {
    "externalId": ("external_id", 128),
    "title": ("title", 40),
    "firstName": ("first_name", 200),
    "lastName": ("last_name", 200),
    "email": ("email", 254),
    "phoneMobile": ("phone_mobile", 40),
    "phoneOther": ("phone_other", 40),
    "dateOfBirth": ("date_of_birth", None),
    "gender": ("gender", None),
    "addressLine1": ("address_line1", 200),
    "addressLine2": ("address_line2", 200),
    "city": ("city", 120),
    "province": ("province", 120),
    "postalCode": ("postal_code", 20),
    "country": ("country", 64),
    "status": ("status", None),
    "leadSource": ("lead_source", 200),
    "note": ("note", 20000),
    "smsOptOut": ("sms_opt_out", None),
    "emailOptOut": ("email_opt_out", None),
}
REQUIRED_FIELDS = ("externalId", "firstName")
BOOLEAN_FIELDS = frozenset({"smsOptOut", "emailOptOut"})
TRUE_WORDS, FALSE_WORDS = frozenset({"true", "yes", "y", "1"}), frozenset({"false", "no", "n", "0"})
GENDER_WORDS = {"m": Gender.MALE, "f": Gender.FEMALE, "male": Gender.MALE, "female": Gender.FEMALE}
GENDER_WORDS |= {"other": Gender.OTHER, "unknown": Gender.UNKNOWN, "u": Gender.UNKNOWN}
# New patients of an import are patients (a practice's list from its PMS) unless a status column says otherwise.
DEFAULT_STATUS = Status.PATIENT
# What an empty cell stores where the column cannot be null (anything else: null, which clears).
BLANK = {"lastName": "", "status": DEFAULT_STATUS, "smsOptOut": False, "emailOptOut": False}
_PHONE_CHARACTERS = re.compile(r"^\+?[0-9 ().\-/]+$")
MIN_PHONE_DIGITS, MAX_PHONE_DIGITS = 6, 15


def normalise_phone(text: str) -> str | None:
    """ "+" and digits ("00" read as "+"), or None when it is not a phone number."""
    if not _PHONE_CHARACTERS.match(text):
        return None
    digits = re.sub(r"\D", "", text)
    international = text.startswith("+") or digits.startswith("00")
    if digits.startswith("00"):
        digits = digits[2:]
    if not MIN_PHONE_DIGITS <= len(digits) <= MAX_PHONE_DIGITS:
        return None
    return f"+{digits}" if international else digits


def _date(text: str) -> datetime.date | None:
    for pattern in ("%Y-%m-%d", "%d/%m/%Y"):
        try:
            return datetime.datetime.strptime(text, pattern).date()
        except ValueError:
            continue
    return None


def _clean_value(name: str, text: str):
    """The stored value of one non-empty cell, or raises ValueError with the problem."""
    if name in BOOLEAN_FIELDS:
        word = text.lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise ValueError("must be true or false (yes/no, 1/0)")
    if name == "email":
        address = text.lower()
        try:
            validate_email(address)
        except ValidationError:
            raise ValueError("is not an e-mail address") from None
        return address
    if name in ("phoneMobile", "phoneOther"):
        phone = normalise_phone(text)
        if phone is None:
            raise ValueError(f"is not a phone number ({MIN_PHONE_DIGITS} to {MAX_PHONE_DIGITS} digits)")
        return phone
    if name == "dateOfBirth":
        day = _date(text)
        if day is None:
            raise ValueError("must be a real date as YYYY-MM-DD or DD/MM/YYYY")
        if day.year < 1900 or day > timezone.localdate():
            raise ValueError("must be after 1900 and not in the future")
        return day
    if name == "gender":
        if text.lower() not in GENDER_WORDS:
            raise ValueError("must be one of male, female, other, unknown (or M, F, U)")
        return GENDER_WORDS[text.lower()]
    if name == "status":
        if text.lower() not in SETTABLE_STATUSES:
            raise ValueError(f"must be one of {', '.join(SETTABLE_STATUSES)}")
        return text.lower()
    return text


def clean_import_row(raw: dict[str, str]) -> tuple[dict, list[tuple[str, str]]]:
    """One row's cells (wire field name → text as read) → (clean values by wire name, [(field, problem)])."""
    values, problems = {}, []
    for name, cell in raw.items():
        text = (cell or "").strip()
        if "\x00" in text:
            problems.append((name, "contains a NUL character"))
            continue
        if not text:
            if name in REQUIRED_FIELDS:
                problems.append((name, "is required"))
            else:
                values[name] = BLANK.get(name)
            continue
        limit = IMPORT_FIELDS[name][1]
        if limit is not None and len(text) > limit:
            problems.append((name, f"is longer than {limit} characters"))
            continue
        try:
            values[name] = _clean_value(name, text)
        except ValueError as problem:
            problems.append((name, str(problem)))
    flagged = {name for name, _ in problems}
    if not flagged & {"email", "phoneMobile"} and not values.get("email") and not values.get("phoneMobile"):
        problems.append(("email" if "email" in raw else "phoneMobile", "an e-mail or a mobile number is required"))
    return values, problems


@dataclass
class ImportOutcome:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


def _lead_source_ids(organization, names: set[str], *, create: bool) -> dict[str, uuid.UUID]:
    """The practice's active lead sources by lower-cased name; missing ones made when `create`."""
    found: dict[str, uuid.UUID] = {}
    if not names:
        return found
    rows = (
        LeadSource.objects.for_org(organization)
        .filter(archived_at__isnull=True)
        .order_by("created_at")
        .values_list("name", "id")
    )
    wanted = {name.lower(): name for name in names}
    for name, source_id in rows:
        if name.lower() in wanted:
            found.setdefault(name.lower(), source_id)
    if create:
        org_id = getattr(organization, "pk", organization)
        missing = [LeadSource(organization_id=org_id, name=wanted[key]) for key in wanted if key not in found]
        for source in LeadSource.objects.bulk_create(missing):
            found[source.name.lower()] = source.id
    return found


def import_patients(*, organization, source: str, fields: list[str], rows: list[dict], dry_run: bool = False):
    """Create or update one batch of clean rows (wire name → value, externalId in each) of `source`, writing only
    `fields` (wire names). Run it inside the caller's transaction. With dry_run nothing is written (missing lead
    sources are not made either) and the outcome says what would happen."""
    outcome = ImportOutcome()
    by_id: dict[str, dict] = {}
    for row in rows:
        by_id.setdefault(row["externalId"], row)  # a repeated id in one batch: the first one
    fields = [name for name in fields if name != "externalId"]
    columns = [f"{a}_id" if a == "lead_source" else a for a in (IMPORT_FIELDS[name][0] for name in fields)]
    existing = {
        row["external_id"]: row
        for row in Patient.objects.for_org(organization)
        .filter(external_source=source, external_id__in=list(by_id))
        .values("external_id", "merged_into_id", "archived_at", *columns)
    }
    names = {row["leadSource"] for row in by_id.values() if row.get("leadSource")}
    lead_sources = _lead_source_ids(organization, names, create=not dry_run) if "leadSource" in fields else {}
    writes = []
    for external_id, row in by_id.items():
        values = {}
        for name, column in zip(fields, columns, strict=True):
            value = row.get(name)
            if name == "leadSource":
                value = lead_sources.get(value.lower(), value) if value else None
            values[column] = value
        current = existing.get(external_id)
        if current is None:
            outcome.created += 1
        elif current["merged_into_id"] is not None or current["archived_at"] is not None:
            outcome.unchanged += 1  # merged away (the survivor is the patient now) or archived: left as it is
            continue
        elif all(current[c] == values[c] for c in columns):
            outcome.unchanged += 1
            continue
        else:
            outcome.updated += 1
        if not dry_run:
            writes.append(_patient(organization, source, external_id, values))
    if writes:
        Patient.objects.bulk_create(
            writes,
            update_conflicts=True,
            unique_fields=["organization", "external_source", "external_id"],
            update_fields=[*columns, "updated_at"],
        )
    return outcome


def _patient(organization, source: str, external_id: str, values: dict) -> Patient:
    return Patient(
        id=uuid.uuid4(),
        organization_id=getattr(organization, "pk", organization),
        external_source=source,
        external_id=external_id,
        **({"status": DEFAULT_STATUS} | values),
    )


# --- the practice's data leaving (export, archive, closing) ----------------------------------------------------------

PATIENT_EXPORT_COLUMNS = {  # CSV header → value path
    "id": "id",
    "externalSource": "external_source",
    "externalId": "external_id",
    "title": "title",
    "firstName": "first_name",
    "lastName": "last_name",
    "preferredName": "preferred_name",
    "dateOfBirth": "date_of_birth",
    "gender": "gender",
    "email": "email",
    "phoneMobile": "phone_mobile",
    "phoneOther": "phone_other",
    "addressLine1": "address_line1",
    "addressLine2": "address_line2",
    "city": "city",
    "province": "province",
    "postalCode": "postal_code",
    "country": "country",
    "status": "status",
    "leadSource": "lead_source__name",
    "location": "location__name",
    "smsOptOut": "sms_opt_out",
    "emailOptOut": "email_opt_out",
    "whatsappOptOut": "whatsapp_opt_out",
    "note": "note",
    "archivedAt": "archived_at",
    "mergedIntoPatientId": "merged_into_id",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
}


def patients_export(*, organization):
    """(header, rows): every patient of the practice (archived and merged ones included) as a values_list queryset
    in a stable order, to be read through a server-side cursor."""
    rows = (
        Patient.objects.for_org(organization).order_by("created_at", "id").values_list(*PATIENT_EXPORT_COLUMNS.values())
    )
    return list(PATIENT_EXPORT_COLUMNS), rows


def patients_erase_batch(*, organization, limit: int = 500) -> int:
    """Erase up to `limit` of the practice's patients as DELETE /patients/{id} erases one (every area's erasure hook,
    in the caller's transaction). Returns how many were erased; 0 when none is left. A closing practice calls it
    until it answers 0."""
    from apps.patients import hooks

    patients = Patient.objects.for_org(organization)
    ids = list(patients.select_for_update().order_by("id").values_list("id", flat=True)[:limit])
    if not ids:
        return 0
    hooks.run_erasure_hooks(organization=organization, patient_ids=ids)
    patients.filter(referred_by_patient_id__in=ids).update(referred_by_patient=None)
    patients.filter(merged_into_id__in=ids).update(merged_into=None)
    patients.filter(id__in=ids).delete()
    return len(ids)
