"""Agreements: the current versions and their acceptance (owners only), repeats, superseded versions, drafts, role
refusals, the history, and tenancy. Every route is reached through a browser session (machine credentials are in
test_session_only.py)."""

import uuid
from datetime import timedelta

import pytest

from apps.agreements.models import AgreementAcceptance
from tests.agreements.conftest import START, new_version, seeded
from tests.helpers import assert_error

pytestmark = pytest.mark.usefixtures("clock")


def acceptances(organization) -> list:
    return list(AgreementAcceptance.objects.for_org(organization).values())


def accept(client, agreement_id):
    """No body: the route takes none (a client may send {} as well)."""
    return client.generic("POST", f"/agreements/{agreement_id}/accept")


def test_the_list_shows_both_current_versions_pending(owner, django_assert_max_num_queries):
    session = owner.session_client()
    terms, dpa = seeded("terms"), seeded("data_processing")

    with django_assert_max_num_queries(8):
        response = session.get("/agreements")

    assert response.status_code == 200, response.content
    assert response.json() == {
        "items": [
            {
                "id": str(terms.id),
                "kind": "terms",
                "version": "2025-06",
                "title": "Terms of service",
                "publishedAt": "2025-06-01T00:00:00.000000Z",
                "effectiveAt": "2025-07-01T00:00:00.000000Z",
                "requiresAcceptance": True,
                "current": True,
                "pending": True,
                "acceptance": None,
            },
            {
                "id": str(dpa.id),
                "kind": "data_processing",
                "version": "2025-06",
                "title": "Data-processing agreement",
                "publishedAt": "2025-06-01T00:00:00.000000Z",
                "effectiveAt": "2025-07-01T00:00:00.000000Z",
                "requiresAcceptance": True,
                "current": True,
                "pending": True,
                "acceptance": None,
            },
        ],
        "pendingCount": 2,
    }


def test_the_owner_accepts_and_a_repeat_is_harmless(owner):
    session = owner.session_client()
    terms = seeded("terms")

    first = accept(session, terms.id)

    assert first.status_code == 201, first.content
    body = first.json()
    assert body == {
        "id": body["id"],
        "agreement": {"id": str(terms.id), "kind": "terms", "version": "2025-06", "title": "Terms of service"},
        "acceptedAt": "2026-03-02T09:00:00.000000Z",
        "acceptedBy": {"id": str(owner.user.id), "name": owner.user.name or owner.user.email},
        "addressBlock": "127.0.0.0/24",
    }
    again = session.post(f"/agreements/{terms.id}/accept", {}, content_type="application/json")
    assert again.status_code == 200, again.content
    assert again.json() == body  # the first acceptance, unchanged
    assert AgreementAcceptance.objects.for_org(owner.organization).count() == 1
    listed = session.get("/agreements").json()
    assert listed["pendingCount"] == 1
    assert listed["items"][0]["pending"] is False
    assert listed["items"][0]["acceptance"] == {
        "id": body["id"],
        "acceptedAt": "2026-03-02T09:00:00.000000Z",
        "acceptedBy": body["acceptedBy"],
    }


@pytest.mark.parametrize("role", ["manager", "front_desk", "analyst", "dentist"])
def test_only_owners_accept(owner, member_factory, role):
    member = member_factory(role=role, organization=owner.organization)

    response = accept(member.session_client(), seeded("terms").id)

    body = assert_error(response, 403, "PERMISSION_DENIED")
    assert body["details"] == {"permission": "agreement:accept"}
    assert acceptances(owner.organization) == []


def test_managers_read_and_other_roles_do_not(owner, member_factory):
    manager = member_factory(role="manager", organization=owner.organization)
    assert manager.session_client().get("/agreements").status_code == 200
    assert manager.session_client().get(f"/agreements/{seeded('terms').id}").status_code == 200
    assert manager.session_client().get("/agreements/acceptances").status_code == 200
    for role in ("front_desk", "telesales", "analyst", "dentist", "nurse"):
        session = member_factory(role=role, organization=owner.organization).session_client()
        for path in ("/agreements", f"/agreements/{seeded('terms').id}", "/agreements/acceptances"):
            assert_error(session.get(path), 403, "PERMISSION_DENIED")


def test_a_new_version_is_pending_again_and_the_old_one_is_superseded(owner):
    session = owner.session_client()
    old = seeded("terms")
    assert accept(session, old.id).status_code == 201
    newer = new_version("terms", "2026-03")

    listed = session.get("/agreements").json()
    assert [(i["id"], i["pending"], i["acceptance"]) for i in listed["items"]] == [
        (str(newer.id), True, None),
        (str(seeded("data_processing").id), True, None),
    ]
    before = acceptances(owner.organization)
    refused = assert_error(accept(session, old.id), 409, "AGREEMENT_SUPERSEDED")
    assert refused["details"] == {
        "kind": "terms",
        "version": "2025-06",
        "currentId": str(newer.id),
        "currentVersion": "2026-03",
    }
    assert acceptances(owner.organization) == before
    # The superseded version stays readable, with the practice's acceptance of it.
    detail = session.get(f"/agreements/{old.id}").json()
    assert (detail["current"], detail["pending"], detail["acceptance"]["id"]) == (False, False, str(before[0]["id"]))
    assert accept(session, newer.id).status_code == 201
    assert session.get("/agreements").json()["pendingCount"] == 1  # the DPA only


def test_the_detail_carries_the_text(owner):
    terms = seeded("terms")

    body = owner.session_client().get(f"/agreements/{terms.id}").json()

    assert body["body"] == terms.body
    assert body["body"].startswith("These terms govern the practice's use of the service.")
    assert (body["current"], body["pending"], body["acceptance"]) == (True, True, None)


def test_drafts_and_scheduled_versions_are_invisible(owner, clock):
    session = owner.session_client()
    draft = new_version("terms", "2026-draft", published=False)
    scheduled = new_version("data_processing", "2026-04")
    scheduled.published_at = START + timedelta(days=1)
    scheduled.save()

    for agreement in (draft, scheduled):
        assert_error(session.get(f"/agreements/{agreement.id}"), 404, "NOT_FOUND")
        assert_error(accept(session, agreement.id), 404, "NOT_FOUND")
    assert [i["version"] for i in session.get("/agreements").json()["items"]] == ["2025-06", "2025-06"]
    assert acceptances(owner.organization) == []

    clock.shift(timedelta(days=2))  # the scheduled version is published now: current, and pending
    items = owner.session_client().get("/agreements").json()["items"]
    assert [(i["kind"], i["version"], i["pending"]) for i in items] == [
        ("terms", "2025-06", True),
        ("data_processing", "2026-04", True),
    ]


def test_unknown_and_malformed_ids(owner):
    session = owner.session_client()
    assert_error(session.get(f"/agreements/{uuid.uuid4()}"), 404, "NOT_FOUND")
    assert_error(accept(session, uuid.uuid4()), 404, "NOT_FOUND")
    body = assert_error(session.get("/agreements/not-an-id"), 400, "VALIDATION_ERROR")
    assert body["details"]["fields"] == {"id": ["must be a UUID"]}
    assert_error(accept(session, "not-an-id"), 400, "VALIDATION_ERROR")
    assert_error(session.delete(f"/agreements/{seeded('terms').id}"), 405, "METHOD_NOT_ALLOWED")
    assert_error(session.get(f"/agreements/{seeded('terms').id}/accept"), 405, "METHOD_NOT_ALLOWED")
    assert acceptances(owner.organization) == []


def test_the_history_is_newest_first_and_paged(owner, clock, django_assert_max_num_queries):
    session = owner.session_client()
    old = seeded("terms")
    accept(session, old.id)
    clock.shift(timedelta(hours=1))
    accept(session, seeded("data_processing").id)
    clock.shift(timedelta(hours=1))
    newer = new_version("terms", "2026-03")
    newer.published_at = START + timedelta(hours=1, minutes=30)
    newer.save()
    accept(session, newer.id)

    with django_assert_max_num_queries(8):
        first = session.get("/agreements/acceptances?limit=2")

    assert first.status_code == 200, first.content
    page = first.json()
    assert [(i["agreement"]["kind"], i["agreement"]["version"]) for i in page["items"]] == [
        ("terms", "2026-03"),
        ("data_processing", "2025-06"),
    ]
    rest = session.get(f"/agreements/acceptances?limit=2&cursor={page['nextCursor']}").json()
    assert [(i["agreement"]["id"], i["acceptedAt"]) for i in rest["items"]] == [
        (str(old.id), "2026-03-02T09:00:00.000000Z")
    ]
    assert rest["nextCursor"] is None
    assert_error(session.get("/agreements/acceptances?limit=0"), 400, "VALIDATION_ERROR")
    assert_error(session.get("/agreements/acceptances?cursor=bogus"), 400, "VALIDATION_ERROR")


def test_another_practices_acceptance_never_shows(owner, outsider):
    terms = seeded("terms")
    assert accept(outsider.session_client(), terms.id).status_code == 201

    session = owner.session_client()
    assert session.get("/agreements").json()["pendingCount"] == 2
    assert session.get(f"/agreements/{terms.id}").json()["acceptance"] is None
    assert session.get("/agreements/acceptances").json() == {"items": [], "nextCursor": None}
    # and the owner's own acceptance is theirs alone
    assert accept(session, terms.id).status_code == 201
    assert AgreementAcceptance.objects.for_org(owner.organization).count() == 1
    assert AgreementAcceptance.objects.for_org(outsider.organization).count() == 1


def test_a_departed_accepter_leaves_the_record(owner, member_factory):
    second = member_factory(role="owner", organization=owner.organization)
    second.user.name = "Dr Rossi"
    second.user.save()
    accept(second.session_client(), seeded("terms").id)
    second.user.delete()

    items = owner.session_client().get("/agreements/acceptances").json()["items"]

    assert items[0]["acceptedBy"] == {"id": None, "name": "Dr Rossi"}
