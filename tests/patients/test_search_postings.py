"""The one-word search in the list's default order reads the postings (patients_searchposting): the same patients,
in the same order, with the same exact total as the GIN path, in two statements on patient tables whatever the
number of matches; other shapes keep the GIN path. The postings stay exact under concurrent creates, archives,
merges and erasures (the triggers run in the writing transactions)."""

import itertools
import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.patients import selectors, services
from apps.patients.models import Patient
from tests.factories import PatientFactory
from tests.helpers import run_in_threads
from tests.patients.test_search_vocabulary import assert_exact

PATIENTS = "/patients"
SURNAMES = ["Santoro", "Santori", "Santarelli", "Sartori", "Rossi", "Santoro-Bianchi"]


@pytest.fixture
def crowd(owner):
    """Thirty patients, several holding two words similar to `santro` (surname and e-mail), some archived, one merged
    away, and created at distinct times so the order is the created order."""
    org = owner.organization
    patients = []
    for n, surname in zip(range(30), itertools.cycle(SURNAMES), strict=False):
        email = f"{surname.lower().replace('-', '')}{n}@example.com" if n % 2 else f"p{n}@example.com"
        patients.append(PatientFactory(organization=org, last_name=surname, email=email))
    for patient in patients[3:6]:
        services.patient_archive(organization=org, user=owner.user, patient=patient, reason="moved away")
    services.patient_merge(organization=org, user=owner.user, survivor=patients[7], duplicate=patients[13])
    return org


def gin_page(org, query, *, limit, offset):
    matching = selectors.patient_filtered(organization=org, query=query)
    rows, total = selectors._search_page(org, matching, query, limit=limit, offset=offset)
    return [row["id"] for row in rows], total


def postings_page(org, query, *, limit, offset):
    rows, total = selectors._postings_page(org, query, limit=limit, offset=offset)
    return [row["id"] for row in rows], total


@pytest.mark.parametrize("q", ["santro", "santoro", "sartori", "rossi", "example", "nobody", "p1"])
@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_postings_and_gin_paths_agree(crowd, q, direction):
    query = selectors.PatientQuery(q=q, direction=direction)
    for limit, offset in [(25, 0), (5, 0), (5, 5), (7, 14), (10, 40)]:
        assert postings_page(crowd, query, limit=limit, offset=offset) == gin_page(
            crowd, query, limit=limit, offset=offset
        ), (q, direction, limit, offset)


@pytest.mark.parametrize("q", ["santro", "santoro", "sartori", "rossi", "example", "nobody", "p1", "santor"])
def test_postings_and_gin_paths_agree_by_relevance(crowd, q):
    """Most relevant first: the scores of the similar terms taken in order give the same patients in the same order
    (ties by id) as the relevance expression computed on every matching patient's words."""
    query = selectors.PatientQuery(q=q, sort="relevance")
    assert selectors._postings_serve(query, limit=25, offset=0)
    for limit, offset in [(25, 0), (5, 0), (5, 5), (7, 14), (10, 40)]:
        assert postings_page(crowd, query, limit=limit, offset=offset) == gin_page(
            crowd, query, limit=limit, offset=offset
        ), (q, limit, offset)


def test_relevance_ranks_the_closer_word_first(owner, api):
    org = owner.organization
    exact = PatientFactory(organization=org, last_name="Santoro", email="a@example.com")
    near = PatientFactory(organization=org, last_name="Santori", email="b@example.com")  # newer: first by date
    body = api.get(PATIENTS, {"q": "santoro", "sort": "relevance"}).json()
    assert [item["id"] for item in body["items"]] == [str(exact.id), str(near.id)]
    assert api.get(PATIENTS, {"q": "santoro"}).json()["items"][0]["id"] == str(near.id)


def test_the_list_route_serves_a_one_word_search_from_the_postings(api, crowd):
    with CaptureQueriesContext(connection) as captured:
        response = api.get(PATIENTS, {"q": "santro", "limit": 5})
    assert response.status_code == 200, response.content
    body = response.json()
    expected_ids, expected_total = gin_page(crowd, selectors.PatientQuery(q="santro"), limit=5, offset=0)
    assert [item["id"] for item in body["items"]] == [str(i) for i in expected_ids]
    assert body["total"] == expected_total > 5
    on_patients = [q["sql"] for q in captured.captured_queries if "patients_" in q["sql"]]
    assert len(on_patients) == 2, on_patients  # postings (page + total), then the page's rows
    assert "patients_searchposting" in on_patients[0]


@pytest.mark.parametrize(
    "params",
    [
        {"q": "santoro rossi"},  # several words
        {"q": "santro", "sort": "lastName"},
        {"q": "santro", "includeArchived": "true"},
        {"q": "santro", "status": "lead"},
        {"q": "santro", "limit": 100, "offset": 450},  # past the postings window
        {"q": "santro", "sort": "relevance", "direction": "asc"},  # least relevant first
        {"q": "santoro rossi", "sort": "relevance"},
    ],
)
def test_other_search_shapes_keep_the_gin_path(api, crowd, params):
    with CaptureQueriesContext(connection) as captured:
        response = api.get(PATIENTS, params)
    assert response.status_code == 200, response.content
    assert not [q for q in captured.captured_queries if "patients_searchposting" in q["sql"]]


def test_archived_and_merged_patients_never_come_from_the_postings(owner, api):
    org = owner.organization
    kept = PatientFactory(organization=org, last_name="Quaranta")
    archived = PatientFactory(organization=org, last_name="Quaranta")
    merged = PatientFactory(organization=org, last_name="Quaranta")
    services.patient_archive(organization=org, user=owner.user, patient=archived, reason="moved away")
    services.patient_merge(organization=org, user=owner.user, survivor=kept, duplicate=merged)

    body = api.get(PATIENTS, {"q": "quaranta"}).json()
    assert [item["id"] for item in body["items"]] == [str(kept.id)] and body["total"] == 1

    services.patient_unarchive(organization=org, user=owner.user, patient=archived)
    body = api.get(PATIENTS, {"q": "quarnta"}).json()
    assert {item["id"] for item in body["items"]} == {str(kept.id), str(archived.id)} and body["total"] == 2


def test_another_practices_postings_never_answer(api, outsider, owner):
    theirs = PatientFactory(organization=outsider.organization, last_name="Zabaglione")
    mine = PatientFactory(organization=owner.organization, last_name="Rossi")

    assert api.get(PATIENTS, {"q": "zabaglione"}).json() == {"items": [], "total": 0, "limit": 25, "offset": 0}
    body = outsider.api_client().get(PATIENTS, {"q": "zabaglion"}).json()
    assert [item["id"] for item in body["items"]] == [str(theirs.id)] and body["total"] == 1
    assert str(mine.id) not in {item["id"] for item in body["items"]}


@pytest.mark.django_db(transaction=True)
def test_postings_and_totals_stay_exact_under_concurrent_writes(member_factory):
    """Four threads at once, each in its own transactions: creates, archives, merges and erasures of patients
    sharing words. Afterwards the postings, the vocabulary and the counters equal what the patients imply, and the
    search total equals the number of matching patients."""
    owner = member_factory()
    org = owner.organization
    seeds = [PatientFactory(organization=org, last_name="Marchetti", email=f"m{n}@example.com") for n in range(24)]
    batches = iter([seeds[0:6], seeds[6:12], seeds[12:18], seeds[18:24]])
    lock = threading.Lock()

    def next_batch():
        with lock:
            return next(batches)

    def creator():
        for n in range(8):
            services.patient_create(
                organization=org,
                user=owner.user,
                data={"first_name": "Ada", "last_name": "Marchetti", "email": f"c{n}@x.io"},
            )

    def archiver():
        for patient in next_batch():
            services.patient_archive(organization=org, user=owner.user, patient=patient, reason="moved away")

    def merger():
        batch = next_batch()
        for survivor, duplicate in zip(batch[::2], batch[1::2], strict=True):
            services.patient_merge(organization=org, user=owner.user, survivor=survivor, duplicate=duplicate)

    def eraser():
        for patient in next_batch():
            services.patient_erase(organization=org, patient=Patient.objects.for_org(org).get(id=patient.id))

    workers = iter([creator, archiver, merger, eraser])
    assert run_in_threads(lambda: next(workers)(), count=4, timeout=60) == []

    assert_exact(org)
    expected = Patient.objects.for_org(org).filter(
        last_name="Marchetti", archived_at__isnull=True, merged_into__isnull=True
    )
    body = owner.api_client().get(PATIENTS, {"q": "marcheti", "limit": 100}).json()
    assert body["total"] == expected.count() == len(body["items"])
    assert {item["id"] for item in body["items"]} == {str(i) for i in expected.values_list("id", flat=True)}
