"""The search vocabulary (patients_searchterm), the practice counters (patients_patientcounter), the search
postings (patients_searchposting) and the list's facets (patients_patientfacet) that the database triggers keep:
exact after every kind of write (create, update, bulk, merge, erase), tenant-isolated, and what the search and the
list's total read. Plus the search semantics built on them: query words ANDed, each typo-tolerant."""

from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.patients import services
from apps.patients.models import (
    FACET_COLUMNS,
    Patient,
    PatientCounter,
    PatientFacet,
    PatientTag,
    SearchPosting,
    SearchTerm,
)
from tests.factories import OrganizationFactory, PatientFactory

PATIENTS = "/patients"


@pytest.fixture
def org(owner):
    return owner.organization


def page(client, **params) -> dict:
    response = client.get(PATIENTS, params)
    assert response.status_code == 200, response.content
    return response.json()


def found(client, q: str, **params) -> set[str]:
    body = page(client, q=q, limit=100, **params)
    assert body["total"] == len(body["items"])
    return {item["id"] for item in body["items"]}


def vocabulary(organization) -> dict[str, int]:
    return dict(SearchTerm.objects.for_org(organization).values_list("term", "patients"))


def expected_vocabulary(organization) -> dict[str, int]:
    """Recomputed from the patients themselves: each word with the number of patients using it."""
    counts: Counter = Counter()
    for words in Patient.objects.for_org(organization).values_list("search_words", flat=True):
        counts.update(set(words))
    return dict(counts)


def counts(organization) -> tuple[int, int]:
    row = PatientCounter.objects.for_org(organization).values_list("active", "unmerged").first()
    return row or (0, 0)


def expected_counts(organization) -> tuple[int, int]:
    patients = Patient.objects.for_org(organization)
    return (
        patients.filter(archived_at__isnull=True, merged_into__isnull=True).count(),
        patients.filter(merged_into__isnull=True).count(),
    )


def postings(organization) -> set[tuple]:
    return set(
        SearchPosting.objects.filter(organization_id=organization.pk).values_list(
            "term", "active", "patient_created_at", "patient_id"
        )
    )


def expected_postings(organization) -> set[tuple]:
    """Recomputed from the patients: each distinct word of every patient not merged away, with its active flag."""
    found = set()
    unmerged = Patient.objects.for_org(organization).filter(merged_into__isnull=True)
    for words, archived_at, created_at, patient_id in unmerged.values_list(
        "search_words", "archived_at", "created_at", "id"
    ):
        found |= {(word, archived_at is None, created_at, patient_id) for word in words}
    return found


def assert_exact(*organizations) -> None:
    for organization in organizations:
        assert vocabulary(organization) == expected_vocabulary(organization)
        assert counts(organization) == expected_counts(organization)
        assert postings(organization) == expected_postings(organization)
        assert facets(organization) == expected_facets(organization)


def facets(organization) -> dict:
    rows = PatientFacet.objects.filter(organization_id=organization.pk).values(
        "patient_id", *FACET_COLUMNS, "custom_fields"
    )
    return {row.pop("patient_id"): row | {"tag_ids": sorted(row["tag_ids"])} for row in rows}


def expected_facets(organization) -> dict:
    """Recomputed from the patients and their tags: a row per patient not merged away."""
    tags: dict = {}
    for patient_id, tag_id in PatientTag.objects.for_org(organization).values_list("patient_id", "tag_id"):
        tags.setdefault(patient_id, []).append(tag_id)
    expected = {}
    for patient in Patient.objects.for_org(organization).filter(merged_into__isnull=True):
        expected[patient.id] = {
            "updated_at": patient.updated_at,
            "status": patient.status,
            "archived": patient.archived_at is not None,
            "tag_ids": sorted(tags.get(patient.id, [])),
            "lead_source_id": patient.lead_source_id,
            "location_id": patient.location_id,
            "gender": patient.gender,
            "preferred_contact_method": patient.preferred_contact_method,
            "sms_opt_out": patient.sms_opt_out,
            "email_opt_out": patient.email_opt_out,
            "whatsapp_opt_out": patient.whatsapp_opt_out,
            "date_of_birth": patient.date_of_birth,
            "contact_attempts": patient.contact_attempts,
            "has_email": bool(patient.email),
            "has_phone": bool(patient.phone_mobile or patient.phone_other),
            "city_upper": patient.city.upper() if patient.city is not None else None,
            "custom_fields": patient.custom_fields,
        }
    return expected


def person(org, **fields):
    defaults = {
        "first_name": "Mario",
        "last_name": "Rossi",
        "email": "mario.rossi@example.com",
        "phone_mobile": "+39 333 1234567",
        "phone_other": None,
        "fiscal_code": "RSSMRA80A01H501U",
        "address_line1": "via Roma 10",
        "city": "Milano",
        "postal_code": "20121",
    }
    return PatientFactory(organization=org, **(defaults | fields))


# --- exactness ---------------------------------------------------------------------------------------------------


def test_create_adds_each_word_once_per_patient(org):
    person(org)
    person(org, first_name="Maria", email="maria@example.com", phone_mobile="+39 333 7654321")

    terms = vocabulary(org)
    assert terms["rossi"] == 2
    assert terms["mario"] == 1  # in the name and the e-mail: still one patient
    assert terms["maria"] == 1
    assert terms["393331234567"] == 1  # phones as digits
    assert terms["rssmra80a01h501u"] == 2
    assert "" not in terms
    assert_exact(org)


def test_update_replaces_the_old_words(owner, org):
    patient = person(org)

    services.patient_update(
        organization=org, user=owner.user, patient=patient, data={"last_name": "Bianchi", "email": None}
    )

    terms = vocabulary(org)
    assert "bianchi" in terms
    assert "rossi" not in terms
    assert "example" not in terms
    assert_exact(org)


def test_an_update_that_changes_no_searched_field_leaves_the_vocabulary_alone(owner, org):
    patient = person(org)
    before = list(SearchTerm.objects.for_org(org).order_by("term").values_list("term", "patients", "updated_at"))

    services.patient_update(organization=org, user=owner.user, patient=patient, data={"note": "Chiamare dopo le 18"})

    after = list(SearchTerm.objects.for_org(org).order_by("term").values_list("term", "patients", "updated_at"))
    assert after == before


def test_set_based_bulk_writes_keep_it_exact(org):
    for n in range(30):
        person(org, last_name=f"Family{n % 7}", email=f"p{n}@example.com", phone_mobile=f"+39 340 {n:07d}")
    patients = Patient.objects.for_org(org)

    patients.filter(last_name="Family3").update(last_name="Renamed")
    patients.filter(last_name="Family4").update(archived_at="2025-01-01T00:00:00Z", status="archived")
    patients.filter(last_name="Family5").delete()

    assert "family3" not in vocabulary(org)
    assert "family5" not in vocabulary(org)
    assert vocabulary(org)["renamed"] == len(patients.filter(last_name="Renamed"))
    assert_exact(org)


def test_merge_keeps_it_exact_and_the_survivor_is_found_by_the_duplicates_details(owner, api, org):
    survivor = person(org, email=None, phone_mobile="+39 333 1111111")
    duplicate = person(org, email="mario.rossi.old@example.com", phone_mobile="+39 333 2222222")

    services.patient_merge(organization=org, user=owner.user, survivor=survivor, duplicate=duplicate)

    assert_exact(org)
    assert counts(org) == (1, 1)
    assert found(api, "mario.rossi.old@example.com") == {str(survivor.id)}  # the merged record is never listed


def test_erasure_leaves_nothing_of_the_patient_in_the_vocabulary(owner, api, org):
    keeper = person(org, first_name="Giulia", last_name="Bianchi", email="giulia@example.org", fiscal_code=None)
    erased = person(
        org,
        first_name="Zeferino",
        last_name="Quaglierini",
        email="zeferino.q@example.org",
        phone_mobile="+39 333 9998887",
        fiscal_code="QGLZFR70A01H501X",
    )
    duplicate = person(org, first_name="Zeferino", last_name="Quaglierini", email="zq.old@example.org")
    services.patient_merge(organization=org, user=owner.user, survivor=erased, duplicate=duplicate)

    response = api.delete(f"{PATIENTS}/{erased.id}")

    assert response.status_code == 200, response.content
    terms = vocabulary(org)
    for word in ("zeferino", "quaglierini", "zq", "393339998887", "qglzfr70a01h501x"):
        assert word not in terms
    assert "bianchi" in terms and "example" in terms  # words the practice still uses stay
    assert_exact(org)
    assert found(api, "quaglierini") == set()
    assert found(api, "bianchi") == {str(keeper.id)}


def test_archive_and_unarchive_move_the_counter_and_the_total(owner, api, org):
    patients = [person(org, email=f"p{n}@example.com") for n in range(3)]
    assert page(api)["total"] == 3

    services.patient_archive(organization=org, user=owner.user, patient=patients[0], reason="moved away")
    assert counts(org) == (2, 3)
    assert page(api)["total"] == 2
    assert page(api, includeArchived="true")["total"] == 3

    services.patient_unarchive(organization=org, user=owner.user, patient=patients[0])
    assert counts(org) == (3, 3)
    assert_exact(org)


def test_the_rebuild_function_reproduces_what_the_trigger_keeps(org):
    other = OrganizationFactory()
    for n in range(5):
        person(org, email=f"p{n}@example.com")
        person(other, last_name="Verdi", email=f"v{n}@example.org")
    before = (vocabulary(org), vocabulary(other), counts(org), counts(other), postings(org), postings(other))
    assert before[4] and before[5]

    with connection.cursor() as cursor:
        cursor.execute("SELECT patients_rebuild_derived()")

    assert (vocabulary(org), vocabulary(other), counts(org), counts(other), postings(org), postings(other)) == before


# --- tenancy -----------------------------------------------------------------------------------------------------


def test_another_practices_words_never_reach_my_vocabulary_or_results(api, org, outsider):
    mine = person(org)
    theirs = person(outsider.organization, last_name="Quaglierini", email="q@example.org")

    assert "quaglierini" not in vocabulary(org)
    assert "quaglierini" in vocabulary(outsider.organization)
    assert found(api, "quaglierini") == set()
    assert found(api, "quaglerini") == set()  # a typo of their word finds nothing here either
    assert found(api, "rossi") == {str(mine.id)}
    assert found(outsider.api_client(), "quaglierini") == {str(theirs.id)}
    assert_exact(org, outsider.organization)


# --- search semantics --------------------------------------------------------------------------------------------


def test_query_words_are_anded(api, org):
    mario_rossi = person(org)
    mario_bianchi = person(org, last_name="Bianchi", email="mb@example.com", fiscal_code=None)
    giulia_bianchi = person(org, first_name="Giulia", last_name="Bianchi", email="gb@example.com", fiscal_code=None)

    assert found(api, "mario bianchi") == {str(mario_bianchi.id)}
    assert found(api, "bianchi") == {str(mario_bianchi.id), str(giulia_bianchi.id)}
    assert found(api, "mario") == {str(mario_rossi.id), str(mario_bianchi.id)}
    assert found(api, "giulia rossi") == set()


@pytest.mark.parametrize(
    ("q", "field"),
    [
        ("esposto", "last name, one letter missing"),
        ("espositto", "last name, one letter doubled"),
        ("Paoli Esposito", "first name typo + last name"),
        ("paolo.esposito@mial.com", "e-mail, domain typo"),
        ("paolo.esposto@mail.com", "e-mail, local-part typo"),
        ("+39 366 777 0003", "phone as typed"),
        ("7770003", "end of the phone"),
        ("SPSPLA69H03", "fiscal code prefix"),
        ("40121", "postal code"),
        ("Bolognia", "city typo"),
        ("largo augusto", "street"),
    ],
)
def test_typo_tolerant_search_over_every_searched_field(api, org, q, field):
    paolo = person(
        org,
        first_name="Paolo",
        last_name="Esposito",
        email="paolo.esposito@mail.com",
        phone_mobile="+39 366 7770003",
        fiscal_code="SPSPLA69H03A944Q",
        address_line1="largo Augusto 2",
        city="Bologna",
        postal_code="40121",
    )
    person(org, postal_code="80135")  # Mario Rossi of Milano: never a match for these

    assert found(api, q) == {str(paolo.id)}, field


def test_search_lists_read_the_patients_table_twice_at_most(api, org):
    for n in range(5):
        person(org, email=f"p{n}@example.com")
    api.get(PATIENTS)

    for params in ({}, {"q": "rossi"}, {"q": "mario rosi", "sort": "relevance"}, {"q": "+39 333 123"}):
        with CaptureQueriesContext(connection) as captured:
            page(api, **params)
        data = [q["sql"] for q in captured.captured_queries if "patients_" in q["sql"]]
        assert len(data) == 2, (params, data)
