"""What is measured: each scenario is one HTTP request shape against the big practice, plus how to replay its SQL."""

import datetime
import json
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

from bench.measure import quantile
from bench.patients import seed
from bench.patients.data import TAGS

EXPORT_CHUNK_SIZE = 1000  # the export view's values.iterator(chunk_size=…)
BULK_SIZE = 500
BULK_TAG_INDEX = next(i for i, (_, _, share) in enumerate(TAGS, start=1) if share == 0)
RECALL_TAG_INDEX = next(i for i, (_, _, share) in enumerate(TAGS, start=1) if share is None)


@dataclass
class Scenario:
    key: str
    label: str
    method: str
    path: str
    kind: str = "read"  # read | export | bulk
    target_ms: float | None = None  # p50 target through HTTP
    body: dict | None = None
    # bulk: the second body (remove) alternating with `body` (add)
    body_undo: dict | None = None
    note: str = ""
    explain: bool = False  # EXPLAIN (ANALYZE, BUFFERS) of its data statements goes into the report
    # filled while running
    statements: list[str] = field(default_factory=list)
    undo_statements: list[str] = field(default_factory=list)
    api_ns: list[int] = field(default_factory=list)
    sql_ns: list[int] = field(default_factory=list)
    extra: dict = field(default_factory=dict)


def percentile(samples: list[int], p: int) -> float:
    """p-th percentile in milliseconds (statistics.quantiles, inclusive method)."""
    return quantile(samples, p) / 1e6


def _typo(word: str) -> str:
    """Swap two adjacent letters near the middle of a word (the commonest typing slip)."""
    i = max(1, len(word) // 2 - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _drop_letter(word: str) -> str:
    """One letter left out just after the middle (santoro → santro)."""
    i = len(word) // 2 + 1
    return word[:i] + word[i + 1 :]


def _email_typo(email: str) -> str:
    """One letter dropped from the local part (giuseppe.esposito3@… → giusppe.esposito3@…)."""
    local, _, domain = email.partition("@")
    return f"{local[:4]}{local[5:]}@{domain}"


SEARCH_SURNAME = "Santoro"  # of middling frequency (about 0.5% of patients): a typical search, not the commonest name


def pick_patients(conn, info: seed.SeedInfo) -> dict:
    """The patient whose name and e-mail the searches misspell: the first active one (lowest n, so the same person
    at every patient count) with a gmail address containing digits and plain first and last names of 6+ letters."""
    candidates = [n for n in range(1, min(info.patients, 5000) + 1) if n % 25 != 7 and n % 1000 != 999]
    ids = {info.patient_id(n): n for n in candidates}
    rows = conn.execute(
        """
        SELECT id, first_name, last_name, email, phone_mobile FROM patients_patient
        WHERE organization_id = %s AND id = ANY(%s) AND archived_at IS NULL AND merged_into_id IS NULL
          AND email LIKE '%%@gmail.com' AND email ~ '[0-9]@'
          AND first_name ~ '^[A-Za-z]{6,}$' AND last_name ~ '^[A-Za-z]{6,}$' AND phone_mobile ~ '^\\+39'
        """,
        [info.organization_id, list(ids)],
    ).fetchall()
    if not rows:
        raise SystemExit("bench: no patient fits the search scenarios (is the practice too small?)")
    _, first_name, last_name, email, phone = min(rows, key=lambda row: ids[row[0]])
    return {
        "first_name": first_name,
        "last_name": last_name,
        "email": email,
        "phone": phone,
        "surname": SEARCH_SURNAME,
    }


def _phone_as_typed(phone: str) -> str:
    """The number as a caller would say it: no country code, in groups of 3-3-rest with dashes."""
    digits = "".join(ch for ch in phone if ch.isdigit()).removeprefix("39")
    return f"{digits[:3]}-{digits[3:6]}-{digits[6:]}"


def filter_keys(info: seed.SeedInfo, now: datetime.datetime) -> list[tuple[str, str, dict]]:
    """(key, label, PatientFilters) for every PatientFilters key alone, with a value the seed makes common or rare
    as a practice's would be."""

    def stamp(days: int) -> str:
        return (now - datetime.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")

    tag = str(info.tag_id(2))  # "Invisalign interest", 30% of patients
    return [
        ("status", "status lead", {"status": ["lead"]}),
        ("tags_any", "tags any of 1 (30%)", {"tagIds": {"any": [tag]}}),
        ("tags_all", "tags all of 2", {"tagIds": {"all": [tag, str(info.tag_id(3))]}}),
        ("tags_none", "tags none of 1", {"tagIds": {"none": [tag]}}),
        ("lead_source", "lead source (1 of 6)", {"leadSourceIds": [str(seed.det_uuid("lead", 0, 1))]}),
        ("location", "location (1 of 3)", {"locationIds": [str(seed.det_uuid("loc", 0, 1))]}),
        ("gender", "gender female", {"gender": ["female"]}),
        ("contact_method", "preferred contact sms", {"preferredContactMethod": ["sms"]}),
        ("sms_opt_out", "SMS opt-out", {"smsOptOut": True}),
        ("email_opt_out", "e-mail opt-out", {"emailOptOut": True}),
        ("whatsapp_opt_out", "WhatsApp opt-out", {"whatsappOptOut": True}),
        ("created_at", "created in the last 30 days", {"createdAt": {"from": stamp(30)}}),
        ("updated_at", "updated in the last 7 days", {"updatedAt": {"from": stamp(7)}}),
        ("date_of_birth", "born in the 1980s", {"dateOfBirth": {"from": "1980-01-01", "to": "1989-12-31"}}),
        ("contact_attempts", "3+ contact attempts", {"contactAttempts": {"min": 3}}),
        ("has_email", "no e-mail", {"hasEmail": False}),
        ("has_phone", "no phone", {"hasPhone": False}),
        ("city", "city Torino (any case)", {"city": "torino"}),
        ("custom_fields", "custom field insurance", {"customFields": {"insurance": "Fasi"}}),
    ]


def detail_patient_n(patients: int) -> int:
    """A patient with tags, a timeline of five entries and consents on three channels (n divisible by 420)."""
    return 420 * max(1, min(20, patients // 420))


def bulk_patient_ns(patients: int) -> list[int]:
    eligible = [n for n in range(1, patients + 1) if n % 25 != 7 and n % 1000 != 999]
    step = max(1, len(eligible) // BULK_SIZE)
    return eligible[::step][:BULK_SIZE]


def build(info: seed.SeedInfo, picked: dict, *, now: datetime.datetime) -> list[Scenario]:
    q_surname = _drop_letter(picked["surname"]).lower()
    q_name = f"{_typo(picked['first_name'])} {picked['last_name']}".lower()
    q_email = _email_typo(picked["email"])
    q_phone = _phone_as_typed(picked["phone"])
    filters = {
        "status": ["lead", "patient"],
        "tagIds": {"any": [str(info.tag_id(2)), str(info.tag_id(3))]},
        "createdAt": {
            "from": (now - datetime.timedelta(days=365)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "to": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }
    bulk_ids = [str(info.patient_id(n)) for n in bulk_patient_ns(info.patients)]
    bulk_tag = str(info.tag_id(BULK_TAG_INDEX))
    detail_id = info.patient_id(detail_patient_n(info.patients))

    def qs(**params) -> str:
        return "?" + urlencode(params, quote_via=quote)

    return [
        Scenario(
            "list", "Default list", "GET", "/patients", target_ms=20, note="25 newest, total counted", explain=True
        ),
        Scenario(
            "search_surname",
            f"Search, misspelt surname `{q_surname}`",
            "GET",
            "/patients" + qs(q=q_surname),
            target_ms=30,
            explain=True,
        ),
        Scenario(
            "search_name",
            f"Search, misspelt first + last name `{q_name}`",
            "GET",
            "/patients" + qs(q=q_name),
            target_ms=30,
            explain=True,
        ),
        Scenario(
            "search_email",
            f"Search, e-mail with a typo `{q_email}`",
            "GET",
            "/patients" + qs(q=q_email),
            target_ms=30,
            explain=True,
        ),
        Scenario(
            "search_phone",
            f"Search, mobile number in another format `{q_phone}`",
            "GET",
            "/patients" + qs(q=q_phone),
            target_ms=30,
            explain=True,
        ),
        Scenario(
            "relevance",
            f"Search sorted by relevance `{q_name}`",
            "GET",
            "/patients" + qs(q=q_name, sort="relevance"),
            explain=True,
        ),
        Scenario(
            "relevance_surname",
            f"One-word search sorted by relevance `{q_surname}`",
            "GET",
            "/patients" + qs(q=q_surname, sort="relevance"),
            explain=True,
        ),
        Scenario(
            "filters",
            "Filters: status lead/patient + 2 tags (any) + created in the last year",
            "GET",
            "/patients" + qs(filters=json.dumps(filters, separators=(",", ":"))),
            target_ms=100,
            explain=True,
        ),
        *(
            Scenario(
                f"filter_{key}",
                f"Filter alone: {label}",
                "GET",
                "/patients" + qs(filters=json.dumps(value, separators=(",", ":"))),
                target_ms=100,
                explain=True,
            )
            for key, label, value in filter_keys(info, now)
        ),
        Scenario("embed_tags", "Default list with embed=tags", "GET", "/patients" + qs(embed="tags")),
        Scenario(
            "detail",
            "One patient with embed=timeline,marketing",
            "GET",
            f"/patients/{detail_id}" + qs(embed="timeline,marketing"),
        ),
        Scenario(
            "bulk_tags",
            f"Bulk tag {len(bulk_ids)} patients (add, then remove, alternating)",
            "POST",
            "/patients/bulk/tags",
            kind="bulk",
            body={"patientIds": bulk_ids, "addTagIds": [bulk_tag]},
            body_undo={"patientIds": bulk_ids, "removeTagIds": [bulk_tag]},
        ),
        Scenario(
            "export",
            f"Export CSV, {min(info.patients, seed.EXPORT_TAG_ROWS):,} rows (tagId filter)",
            "GET",
            "/patients/export" + qs(tagId=str(info.tag_id(RECALL_TAG_INDEX))),
            kind="export",
            target_ms=1000,
            explain=True,
        ),
    ]
