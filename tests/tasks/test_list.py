"""Tasks: GET /tasks — views (mine, overdue, due today, all), filters, order, offset paging, bounded queries and
tenancy (another practice's tasks never appear)."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.tasks import selectors
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.tasks.helpers import TASKS, make_task


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["items"]]


def test_list_is_sorted_by_due_date_undated_last_then_created(owner, api):
    org = owner.organization
    now = timezone.now()
    undated_old = make_task(org, title="a")
    later = make_task(org, due_at=now + timedelta(days=2))
    sooner = make_task(org, due_at=now + timedelta(days=1))
    same_due_second = make_task(org, due_at=now + timedelta(days=2))
    undated_new = make_task(org, title="b")

    response = api.get(TASKS)

    assert ids(response) == [str(t.id) for t in (sooner, later, same_due_second, undated_old, undated_new)]
    body = response.json()
    assert body["total"] == 5 and body["limit"] == 25 and body["offset"] == 0


def test_offset_paging(owner, api):
    org = owner.organization
    now = timezone.now()
    tasks = [make_task(org, due_at=now + timedelta(hours=i)) for i in range(7)]

    first = api.get(TASKS, {"limit": 3})
    second = api.get(TASKS, {"limit": 3, "offset": 3})
    last = api.get(TASKS, {"limit": 3, "offset": 6})

    assert ids(first) + ids(second) + ids(last) == [str(t.id) for t in tasks]
    assert first.json()["total"] == 7 and last.json()["limit"] == 3 and last.json()["offset"] == 6


def test_views_mine_overdue_and_due_today(owner, member_factory, api):
    org = owner.organization
    colleague = member_factory(role="front_desk", organization=org)
    now = timezone.now()
    _start, end = selectors.today_bounds(org)
    mine = make_task(org, assignee=owner.user)
    theirs = make_task(org, assignee=colleague.user)
    overdue = make_task(org, assignee=colleague.user, due_at=now - timedelta(days=3))
    overdue_done = make_task(org, due_at=now - timedelta(days=3), status="completed")
    due_today = make_task(org, due_at=end - timedelta(seconds=1))
    due_tomorrow = make_task(org, due_at=end + timedelta(minutes=1))
    due_today_cancelled = make_task(org, due_at=end - timedelta(seconds=1), status="cancelled")

    assert ids(api.get(TASKS, {"view": "mine"})) == [str(mine.id)]
    assert ids(colleague.api_client().get(TASKS, {"view": "mine"})) == [str(overdue.id), str(theirs.id)]
    assert ids(api.get(TASKS, {"view": "overdue"})) == [str(overdue.id)]
    assert ids(api.get(TASKS, {"view": "due_today"})) == [str(due_today.id)]
    assert set(ids(api.get(TASKS, {"view": "all"}))) == {
        str(t.id) for t in (mine, theirs, overdue, overdue_done, due_today, due_tomorrow, due_today_cancelled)
    }


def test_due_today_uses_the_practice_timezone(owner):
    """The selector reads organization.timezone (an IANA name; UTC by default and for an unknown name)."""
    org = owner.organization
    now = datetime(2030, 6, 1, 23, 30, tzinfo=UTC)  # 1 June 23:30 UTC is 2 June 01:30 in Rome
    utc_start, _ = selectors.today_bounds(org, now)
    assert utc_start.isoformat() == "2030-06-01T00:00:00+00:00"
    org.timezone = "Europe/Rome"
    rome_start, rome_end = selectors.today_bounds(org, now)
    assert rome_start.isoformat() == "2030-06-02T00:00:00+02:00"
    assert rome_end.isoformat() == "2030-06-03T00:00:00+02:00"
    org.timezone = "Not/AZone"
    assert selectors.today_bounds(org, now)[0] == utc_start


def test_filters_combine(owner, member_factory, api):
    org = owner.organization
    colleague = member_factory(role="telesales", organization=org)
    patient = PatientFactory(organization=org)
    base = timezone.now() + timedelta(days=10)
    match = make_task(org, assignee=colleague.user, patient=patient, priority="high", due_at=base)
    make_task(org, assignee=colleague.user, patient=patient, priority="low", due_at=base)
    make_task(org, assignee=owner.user, patient=patient, priority="high", due_at=base)
    make_task(org, assignee=colleague.user, priority="high", due_at=base)
    make_task(org, assignee=colleague.user, patient=patient, priority="high", due_at=base + timedelta(days=5))
    make_task(org, assignee=colleague.user, patient=patient, priority="high", due_at=base, status="completed")

    response = api.get(
        TASKS,
        {
            "assigneeId": str(colleague.user.id),
            "patientId": str(patient.id),
            "priority": "high",
            "status": "open",
            "dueAfter": (base - timedelta(hours=1)).isoformat(),
            "dueBefore": (base + timedelta(hours=1)).isoformat(),
        },
    )

    assert ids(response) == [str(match.id)]
    assert response.json()["total"] == 1
    assert len(ids(api.get(TASKS, {"patientId": str(patient.id)}))) == 5
    assert len(ids(api.get(TASKS, {"status": "completed"}))) == 1


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"view": "someday"}, "view"),
        ({"status": "done"}, "status"),
        ({"priority": "asap"}, "priority"),
        ({"assigneeId": "x"}, "assigneeId"),
        ({"patientId": "x"}, "patientId"),
        ({"dueBefore": "2030-01-01T00:00:00"}, "dueBefore"),
        ({"dueAfter": "yesterday"}, "dueAfter"),
        ({"dueAfter": "2030-01-02T00:00:00Z", "dueBefore": "2030-01-01T00:00:00Z"}, "dueAfter"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"sort": "title"}, "sort"),
    ],
)
def test_bad_query_is_400_naming_the_parameter(api, params, field):
    body = assert_error(api.get(TASKS, params), 400, "VALIDATION_ERROR")
    assert field in body["details"]["fields"], body


def test_list_never_shows_another_practices_tasks(owner, outsider, api):
    theirs_patient = PatientFactory(organization=outsider.organization)
    make_task(outsider.organization, assignee=outsider.user, patient=theirs_patient)
    mine = make_task(owner.organization)

    assert ids(api.get(TASKS)) == [str(mine.id)]
    assert ids(api.get(TASKS, {"patientId": str(theirs_patient.id)})) == []
    assert ids(api.get(TASKS, {"assigneeId": str(outsider.user.id)})) == []
    assert api.get(TASKS, {"patientId": str(uuid.uuid4())}).json()["total"] == 0


@pytest.mark.parametrize(
    "params",
    [{}, {"view": "mine"}, {"view": "overdue"}, {"view": "due_today"}, {"patientId": None, "priority": "high"}],
)
def test_list_query_count_does_not_grow_with_the_page(owner, api, django_assert_num_queries, params):
    org = owner.organization
    patient = PatientFactory(organization=org)
    params = {k: (str(patient.id) if k == "patientId" else v) for k, v in params.items()}
    now = timezone.now()
    make_task(org, assignee=owner.user, patient=patient, priority="high", due_at=now - timedelta(hours=1))
    assert api.get(TASKS, params).status_code == 200  # first use of the key records lastUsedAt
    with CaptureQueriesContext(connection) as one_row:
        assert api.get(TASKS, params).status_code == 200
    for i in range(40):
        make_task(org, assignee=owner.user, patient=patient, priority="high", due_at=now - timedelta(minutes=i))

    with django_assert_num_queries(len(one_row.captured_queries)):
        response = api.get(TASKS, {**params, "limit": 100})

    assert response.status_code == 200
    assert len(one_row.captured_queries) <= 12
