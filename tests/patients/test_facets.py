"""A filtered list (no search) counts and pages on the facets (patients_patientfacet): the same patients, in the same
order, with the same exact total as the patients table answers, for every PatientFilters key and the list's own
parameters; tenant-isolated; and the facets stay exact after tag writes, merges, erasures and concurrent writers
(the triggers run in the writing transactions)."""

import datetime
import itertools
import json
import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.patients import selectors, services
from apps.patients.models import Patient, PatientFacet
from tests.factories import LeadSourceFactory, LocationFactory, PatientFactory, TagFactory
from tests.helpers import run_in_threads
from tests.patients.test_search_vocabulary import assert_exact

PATIENTS = "/patients"


@pytest.fixture
def crowd(owner):
    """Forty patients with every filtered column varied, tags in overlapping sets, some archived, two merged away;
    created at distinct times. Returns (organization, tags, lead sources, locations)."""
    org = owner.organization
    tags = [TagFactory(organization=org, name=f"T{n}") for n in range(4)]
    sources = [LeadSourceFactory(organization=org) for _ in range(2)]
    locations = [LocationFactory(organization=org) for _ in range(2)]
    start = timezone.now() - datetime.timedelta(days=400)
    patients = []
    for n in range(40):
        patient = PatientFactory(
            organization=org,
            status=["lead", "patient", "enquiry", "inactive"][n % 4],
            gender=["female", "male", None][n % 3],
            preferred_contact_method=["sms", "email", None][n % 3],
            sms_opt_out=n % 5 == 0,
            email_opt_out=n % 6 == 0,
            whatsapp_opt_out=n % 7 == 0,
            date_of_birth=datetime.date(1950 + n, 1 + n % 12, 1) if n % 4 else None,
            contact_attempts=n % 6,
            email=f"p{n}@example.com" if n % 3 else None,
            phone_mobile="+39 333 000 00" + str(n).zfill(2) if n % 4 != 1 else "",
            phone_other=None,
            city=["Milano", "milano", "Roma", None][n % 4],
            lead_source=sources[n % 2] if n % 3 else None,
            custom_fields={"insurance": ["Fasi", "Generali"][n % 2], "vip": n % 3 == 0} if n % 4 else {},
            location=locations[n % 2] if n % 5 else None,
        )
        Patient.objects.for_org(org).filter(id=patient.id).update(
            created_at=start + datetime.timedelta(days=10 * n), updated_at=start + datetime.timedelta(days=(7 * n) % 40)
        )
        patients.append(patient)
    services.patients_bulk_tags(
        organization=org,
        user=owner.user,
        patient_ids=[p.id for p in patients[::2]],
        add_tag_ids=[tags[0].id],
        remove_tag_ids=[],
    )
    services.patients_bulk_tags(
        organization=org,
        user=owner.user,
        patient_ids=[p.id for p in patients[::3]],
        add_tag_ids=[tags[1].id, tags[2].id],
        remove_tag_ids=[],
    )
    for patient in patients[4:8]:
        services.patient_archive(organization=org, user=owner.user, patient=patient, reason="moved away")
    services.patient_merge(organization=org, user=owner.user, survivor=patients[9], duplicate=patients[12])
    services.patient_merge(organization=org, user=owner.user, survivor=patients[15], duplicate=patients[18])
    return org, tags, sources, locations


def shapes(tags, sources, locations) -> list[dict]:
    """PatientQuery keyword sets: every PatientFilters key alone, the list's own filters, and combinations."""
    day = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    t0, t1, t2, t3 = (tag.id for tag in tags)
    return [
        {"filters": {"status": ["lead", "patient"]}},
        {"filters": {"tag_ids": {"any": [t0, t1]}}},
        {"filters": {"tag_ids": {"all": [t1, t2]}}},
        {"filters": {"tag_ids": {"none": [t0]}}},
        {"filters": {"tag_ids": {"any": [t3]}}},
        {"filters": {"lead_source_ids": [sources[0].id]}},
        {"filters": {"location_ids": [locations[1].id, locations[0].id]}},
        {"filters": {"gender": ["female"]}},
        {"filters": {"preferred_contact_method": ["sms", "email"]}},
        {"filters": {"sms_opt_out": True}},
        {"filters": {"email_opt_out": False}},
        {"filters": {"whatsapp_opt_out": True}},
        {"filters": {"created_at": {"from": timezone.now() - datetime.timedelta(days=200)}}},
        {"filters": {"updated_at": {"to": timezone.now() - datetime.timedelta(days=380)}}},
        {"filters": {"date_of_birth": {"from": datetime.date(1960, 1, 1), "to": datetime.date(1980, 12, 31)}}},
        {"filters": {"contact_attempts": {"min": 2, "max": 4}}},
        {"filters": {"has_email": True}},
        {"filters": {"has_email": False}},
        {"filters": {"has_phone": True}},
        {"filters": {"has_phone": False}},
        {"filters": {"city": "MILANO"}},
        {"filters": {"custom_fields": {"insurance": "Fasi"}}},
        {"filters": {"custom_fields": {"insurance": "Generali", "vip": True}}},
        {"status": "archived"},
        {"status": "lead", "include_archived": True},
        {"tag_id": t0},
        {"lead_source_id": sources[1].id},
        {"include_archived": True, "filters": {"tag_ids": {"any": [t1]}}},
        {
            "filters": {
                "status": ["lead", "patient", "enquiry"],
                "tag_ids": {"any": [t0, t1], "none": [t2]},
                "created_at": {"from": day - datetime.timedelta(days=900), "to": timezone.now()},
                "has_phone": True,
            }
        },
    ]


def patients_page(org, query, *, limit, offset):
    """What the patients table answers (the path lists took before the facets)."""
    matching = selectors.patient_filtered(organization=org, query=query)
    ids = list(selectors.patient_ordered(matching, query).values_list("id", flat=True)[offset : offset + limit])
    return ids, matching.count()


def facets_page(org, query, *, limit, offset):
    rows, total = selectors._facets_page(org, query, limit=limit, offset=offset)
    return [row["id"] for row in rows], total


@pytest.mark.parametrize("sort", ["createdAt", "updatedAt", "lastName"])
@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_facets_and_patients_answer_the_same(crowd, sort, direction):
    org, tags, sources, locations = crowd
    assert_exact(org)
    for params in shapes(tags, sources, locations):
        query = selectors.PatientQuery(sort=sort, direction=direction, **params)
        assert selectors._facets_serve(query)
        for limit, offset in [(25, 0), (4, 0), (4, 4), (7, 14), (10, 40)]:
            assert facets_page(org, query, limit=limit, offset=offset) == patients_page(
                org, query, limit=limit, offset=offset
            ), (params, sort, direction, limit, offset)


def test_a_filtered_list_counts_and_pages_on_the_facets(api, crowd):
    org, tags, _, _ = crowd
    filters = {"status": ["lead", "patient"], "tagIds": {"any": [str(tags[0].id), str(tags[1].id)]}}
    with CaptureQueriesContext(connection) as captured:
        body = api.get(PATIENTS, {"filters": json.dumps(filters), "limit": 5}).json()
    statements = [q["sql"] for q in captured.captured_queries]
    on_facets = [sql for sql in statements if "patients_patientfacet" in sql]
    assert len(on_facets) == 2  # the count and the page's ids
    assert not any("patients_patienttag" in sql for sql in on_facets)
    expected = selectors.patient_filtered(
        organization=org,
        query=selectors.PatientQuery(
            filters={"status": ["lead", "patient"], "tag_ids": {"any": [tags[0].id, tags[1].id]}}
        ),
    )
    assert body["total"] == expected.count() > 5
    newest = expected.order_by("-created_at", "-id").values_list("id", flat=True)[:5]
    assert [item["id"] for item in body["items"]] == [str(i) for i in newest]


@pytest.mark.parametrize("params", [{"q": "rossi"}, {"q": "rossi", "filters": json.dumps({"status": ["lead"]})}])
def test_searches_stay_on_the_patients_table(api, crowd, params):
    with CaptureQueriesContext(connection) as captured:
        assert api.get(PATIENTS, params).status_code == 200
    assert not any("patients_patientfacet" in q["sql"] for q in captured.captured_queries)


def test_another_practices_facets_never_count(api, crowd, outsider):
    org = crowd[0]
    theirs = outsider.organization
    their_tag = TagFactory(organization=theirs, name="T0")
    their_patients = [PatientFactory(organization=theirs, status="lead") for _ in range(3)]
    services.patients_bulk_tags(
        organization=theirs,
        user=outsider.user,
        patient_ids=[p.id for p in their_patients],
        add_tag_ids=[their_tag.id],
        remove_tag_ids=[],
    )
    mine = api.get(PATIENTS, {"filters": json.dumps({"tagIds": {"any": [str(their_tag.id)]}})}).json()
    assert mine["total"] == 0 and mine["items"] == []
    body = outsider.api_client().get(PATIENTS, {"filters": json.dumps({"status": ["lead"]})}).json()
    assert body["total"] == 3
    assert {item["id"] for item in body["items"]} == {str(p.id) for p in their_patients}
    assert_exact(org, theirs)


def test_tag_writes_merges_and_erasures_keep_the_facets_exact(owner, crowd):
    org, tags, _, _ = crowd
    patients = list(Patient.objects.for_org(org).filter(merged_into__isnull=True).order_by("created_at"))
    services.patients_bulk_tags(
        organization=org,
        user=owner.user,
        patient_ids=[p.id for p in patients[:10]],
        add_tag_ids=[tags[3].id],
        remove_tag_ids=[tags[0].id],
    )
    assert_exact(org)
    services.tag_delete(organization=org, tag=tags[1])
    assert_exact(org)
    services.patient_merge(organization=org, user=owner.user, survivor=patients[1], duplicate=patients[2])
    assert_exact(org)
    assert not PatientFacet.objects.filter(patient_id=patients[2].id).exists()
    services.patient_erase(organization=org, patient=Patient.objects.for_org(org).get(id=patients[3].id))
    assert_exact(org)
    services.patient_update(organization=org, user=owner.user, patient=patients[5], data={"city": "Torino"})
    archived = Patient.objects.for_org(org).get(id=patients[4].id)
    assert archived.archived_at is not None
    services.patient_unarchive(organization=org, user=owner.user, patient=archived)
    assert_exact(org)


@pytest.mark.django_db(transaction=True)
def test_facets_and_totals_stay_exact_under_concurrent_writes(member_factory):
    """Five threads at once, each in its own transactions: two tag and untag overlapping patients with different
    tags, one creates, one archives and merges, one erases. Afterwards the facets equal what the patients and their
    tags imply, and each filtered total equals the number of matching patients."""
    owner = member_factory()
    org = owner.organization
    tags = [TagFactory(organization=org, name=f"T{n}") for n in range(3)]
    people = [PatientFactory(organization=org, status="lead") for _ in range(30)]
    shared = [p.id for p in people[:20]]
    lock = threading.Lock()

    def tagger(tag, other):
        def run():
            for n in range(6):
                services.patients_bulk_tags(
                    organization=org,
                    user=owner.user,
                    patient_ids=shared[n % 2 :: 2] if n % 3 else shared,
                    add_tag_ids=[tag.id],
                    remove_tag_ids=[other.id] if n % 2 else [],
                )

        return run

    def creator():
        for n in range(6):
            services.patient_create(
                organization=org, user=owner.user, data={"first_name": "Ada", "email": f"ada{n}@example.com"}
            )

    def archiver_merger():
        for patient in people[20:24]:
            services.patient_archive(organization=org, user=owner.user, patient=patient, reason="moved away")
        for survivor, duplicate in [(people[0], people[1]), (people[2], people[3])]:
            services.patient_merge(organization=org, user=owner.user, survivor=survivor, duplicate=duplicate)

    def eraser():
        for patient in people[24:30] + people[10:12]:
            services.patient_erase(organization=org, patient=Patient.objects.for_org(org).get(id=patient.id))

    workers = iter([tagger(tags[0], tags[1]), tagger(tags[1], tags[0]), creator, archiver_merger, eraser])

    def next_worker():
        with lock:
            worker = next(workers)
        worker()

    assert run_in_threads(next_worker, count=5, timeout=90) == []

    assert_exact(org)
    client = owner.api_client()
    for tag, other in itertools.permutations(tags, 2):
        filters = {"tagIds": {"any": [str(tag.id)], "none": [str(other.id)]}, "status": ["lead"]}
        body = client.get(PATIENTS, {"filters": json.dumps(filters), "limit": 100}).json()
        expected = selectors.patient_filtered(
            organization=org,
            query=selectors.PatientQuery(
                filters={"tag_ids": {"any": [tag.id], "none": [other.id]}, "status": ["lead"]}
            ),
        )
        assert body["total"] == expected.count() == len(body["items"])
        assert {item["id"] for item in body["items"]} == {str(i) for i in expected.values_list("id", flat=True)}
