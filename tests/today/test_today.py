"""GET /today: the member's day in one request — the right rows in each section, the caller's own tasks only, the
practice's timezone, per-role access, OAuth scopes, a fixed number of queries, and no other practice's data."""

from datetime import UTC, datetime, timedelta

import pytest

from apps.accounts.models import Organization
from apps.core.credentials import OAUTH, Credential
from apps.tasks.selectors import today_bounds
from tests.factories import PatientFactory
from tests.helpers import assert_error
from tests.today.helpers import make_appointment, make_journey, make_lead, make_task

TODAY = "/today"
NOW = datetime(2031, 3, 4, 10, 0, tzinfo=UTC)  # a Tuesday, mid-morning in Rome (11:00)


@pytest.fixture(autouse=True)
def clock(time_machine):
    time_machine.move_to(NOW, tick=False)
    return time_machine


def ids(section: dict) -> list[str]:
    return [item["id"] for item in section["items"]]


def get_today(client) -> dict:
    response = client.get(TODAY)
    assert response.status_code == 200, response.content
    return response.json()


def test_tasks_are_mine_open_and_due_today_or_overdue(owner, member_factory, api):
    org = owner.organization
    colleague = member_factory(role="front_desk", organization=org)
    _start, end = today_bounds(org)
    overdue = make_task(org, assignee=owner.user, due_at=NOW - timedelta(days=2))
    due_earlier_today = make_task(org, assignee=owner.user, due_at=NOW - timedelta(minutes=5))
    due_later_today = make_task(org, assignee=owner.user, due_at=end - timedelta(seconds=1))
    make_task(org, assignee=owner.user, due_at=end)  # tomorrow
    make_task(org, assignee=owner.user)  # no due date
    make_task(org, assignee=owner.user, due_at=NOW - timedelta(days=1), status="completed")
    make_task(org, assignee=owner.user, due_at=NOW, status="cancelled")
    theirs = make_task(org, assignee=colleague.user, due_at=NOW - timedelta(hours=1))
    make_task(org, due_at=NOW - timedelta(hours=1))  # unassigned

    tasks = get_today(api)["tasks"]

    assert ids(tasks) == [str(t.id) for t in (overdue, due_earlier_today, due_later_today)]
    assert tasks["total"] == 3 and tasks["overdueTotal"] == 2
    assert tasks["items"][0]["dueAt"] == "2031-03-02T10:00:00.000000Z"
    assert ids(get_today(colleague.api_client())["tasks"]) == [str(theirs.id)]


def test_appointments_are_the_practices_today_in_its_timezone_without_cancelled_ones(owner, api):
    org = owner.organization
    Organization.objects.filter(id=org.id).update(timezone="Europe/Rome")  # UTC+1 in March
    early = make_appointment(org, datetime(2031, 3, 3, 23, 15, tzinfo=UTC))  # 00:15 on the 4th in Rome
    late = make_appointment(org, datetime(2031, 3, 4, 22, 0, tzinfo=UTC))  # 23:00 in Rome
    no_show = make_appointment(org, datetime(2031, 3, 4, 8, 0, tzinfo=UTC), status="no_show")
    make_appointment(org, datetime(2031, 3, 4, 9, 0, tzinfo=UTC), status="cancelled")
    make_appointment(org, datetime(2031, 3, 3, 22, 0, tzinfo=UTC))  # 23:00 on the 3rd in Rome
    make_appointment(org, datetime(2031, 3, 4, 23, 0, tzinfo=UTC))  # midnight on the 5th in Rome

    body = get_today(api)

    assert body["date"] == "2031-03-04" and body["timezone"] == "Europe/Rome"
    assert ids(body["appointments"]) == [str(a.id) for a in (early, no_show, late)]
    assert body["appointments"]["total"] == 3
    first = body["appointments"]["items"][0]
    assert first["patient"]["id"] == str(early.patient_id) and first["practitioner"]["id"] == str(early.practitioner_id)


def test_new_leads_since_the_start_of_yesterday_newest_first(owner, api):
    org = owner.organization
    yesterday_start = datetime(2031, 3, 3, tzinfo=UTC)
    first_thing_yesterday = make_lead(org, yesterday_start)
    enquiry_this_morning = make_lead(org, NOW - timedelta(hours=1), status="enquiry")
    make_lead(org, yesterday_start - timedelta(seconds=1))  # the day before yesterday
    make_lead(org, NOW, status="patient")
    make_lead(org, NOW, status="archived", archived_at=NOW)
    survivor = PatientFactory(organization=org)
    make_lead(org, NOW, merged_into=survivor)

    leads = get_today(api)["newLeads"]

    assert ids(leads)[-2:] == [str(enquiry_this_morning.id), str(first_thing_yesterday.id)]
    assert ids(leads)[0] == str(survivor.id)  # created now by the factory: a lead too
    assert leads["total"] == 3 and leads["since"] == "2031-03-03T00:00:00.000000Z"
    assert "tags" not in leads["items"][0] and leads["items"][0]["status"] == "lead"


def test_journeys_needing_action_mine_or_unassigned_without_next_step_or_stale(owner, member_factory, api):
    org = owner.organization
    colleague = member_factory(role="telesales", organization=org)
    user = owner.user
    fresh = NOW - timedelta(days=1)
    stale = NOW - timedelta(days=8)
    no_next_step = make_journey(org, user=user, assignee=user, in_stage_since=fresh)
    unassigned = make_journey(org, user=user, assignee=None, in_stage_since=fresh)
    with_task = make_journey(org, user=user, assignee=user, in_stage_since=fresh)
    make_task(org, patient=with_task.patient, assignee=colleague.user)
    with_appointment = make_journey(org, user=user, assignee=user, in_stage_since=fresh)
    make_appointment(org, NOW + timedelta(days=10), patient=with_appointment.patient)
    stale_with_task = make_journey(org, user=user, assignee=user, in_stage_since=stale)
    make_task(org, patient=stale_with_task.patient)
    with_done_task_and_past_visit = make_journey(org, user=user, assignee=user, in_stage_since=fresh)
    make_task(org, patient=with_done_task_and_past_visit.patient, status="completed")
    make_appointment(org, NOW - timedelta(days=3), patient=with_done_task_and_past_visit.patient, status="booked")
    make_journey(org, user=user, assignee=colleague.user, in_stage_since=stale)  # someone else's
    won = make_journey(org, user=user, assignee=user, in_stage_since=stale)
    won.status = "won"
    won.save(update_fields=["status"])

    journeys = get_today(api)["journeys"]

    by_id = {item["id"]: item["needsActionReasons"] for item in journeys["items"]}
    assert by_id == {
        str(stale_with_task.id): ["stale"],
        str(no_next_step.id): ["no_next_step"],
        str(unassigned.id): ["no_next_step"],
        str(with_done_task_and_past_visit.id): ["no_next_step"],
    }
    assert ids(journeys)[0] == str(stale_with_task.id)  # longest in its stage first
    assert journeys["total"] == 4 and journeys["staleAfterDays"] == 7
    assert journeys["items"][0]["stage"]["name"] and journeys["items"][0]["patient"]["id"]
    assert str(with_task.id) not in by_id and str(with_appointment.id) not in by_id


def test_lists_are_capped_by_limit_and_carry_their_totals(owner, api):
    org = owner.organization
    for hours in range(5):
        make_task(org, assignee=owner.user, due_at=NOW - timedelta(hours=hours))
    for _ in range(3):
        make_lead(org, NOW)

    body = api.get("/today", {"limit": 2}).json()

    assert len(body["tasks"]["items"]) == 2 and body["tasks"]["total"] == 5 and body["tasks"]["overdueTotal"] == 4
    assert len(body["newLeads"]["items"]) == 2 and body["newLeads"]["total"] == 3
    assert len(get_today(api)["tasks"]["items"]) == 5  # the default (20) holds them all


@pytest.mark.parametrize("limit", ["0", "101", "x", ""])
def test_a_bad_limit_is_400_naming_it(api, limit):
    response = api.get("/today", {"limit": limit})

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert "limit" in response.json()["details"]["fields"]


def test_an_empty_day(owner, api):
    body = get_today(api)

    for section in ("tasks", "appointments", "newLeads", "journeys"):
        assert body[section]["items"] == [] and body[section]["total"] == 0, section
    assert body["tasks"]["overdueTotal"] == 0
    assert body["generatedAt"] == "2031-03-04T10:00:00.000000Z"


def _fill(owner, n: int) -> None:
    org, user = owner.organization, owner.user
    for i in range(n):
        make_task(org, assignee=user, due_at=NOW - timedelta(hours=i))
        make_appointment(org, NOW + timedelta(minutes=30 * i))
        make_lead(org, NOW - timedelta(minutes=i))
        make_journey(org, user=user, assignee=user, in_stage_since=NOW - timedelta(days=i))


def test_a_fixed_number_of_queries_whatever_the_data(
    owner, api, django_assert_max_num_queries, django_assert_num_queries
):
    """Credential and membership reads, then per section its page and, once the page is full, one count."""
    _fill(owner, 1)
    get_today(api)  # warm: the API key's last-use touch happens once a minute
    with django_assert_max_num_queries(8):
        get_today(api)
    _fill(owner, 20)  # every section past the default limit of 20
    with django_assert_max_num_queries(10) as full:
        get_today(api)
    _fill(owner, 10)
    with django_assert_num_queries(len(full.captured_queries)):
        body = get_today(api)
    assert body["tasks"]["total"] == 31 and body["journeys"]["total"] == 31
    assert len(body["tasks"]["items"]) == 20


def test_another_practices_data_never_appears(owner, outsider, api):
    theirs = outsider.organization
    make_task(theirs, assignee=owner.user, due_at=NOW)  # even one naming our member
    make_appointment(theirs, NOW)
    make_lead(theirs, NOW)
    make_journey(theirs, user=outsider.user, assignee=None, in_stage_since=NOW - timedelta(days=30))

    body = get_today(api)

    for section in ("tasks", "appointments", "newLeads", "journeys"):
        assert body[section]["total"] == 0, section
    assert get_today(outsider.api_client())["appointments"]["total"] == 1


def test_the_practice_is_chosen_like_everywhere_else(owner, outsider, member_factory):
    """A member of two practices names one with X-Organization-ID; naming a practice they are not in is 403."""
    member_factory(role="front_desk", organization=outsider.organization)
    make_appointment(owner.organization, NOW)
    stranger = member_factory(role="owner")

    assert get_today(owner.api_client(owner.organization.id))["appointments"]["total"] == 1
    assert_error(owner.api_client(stranger.organization.id).get(TODAY), 403, "ORGANIZATION_FORBIDDEN")


@pytest.mark.parametrize(
    ("role", "status"),
    [
        ("owner", 200),
        ("manager", 200),
        ("front_desk", 200),
        ("telesales", 200),
        ("analyst", 200),
        ("dentist", 403),
        ("hygienist", 403),
        ("nurse", 403),
    ],
)
def test_access_per_role(owner, member_factory, role, status):
    member = member_factory(role=role, organization=owner.organization)
    response = member.api_client().get(TODAY)
    assert response.status_code == status, response.content
    if status == 403:
        assert_error(response, 403, "PERMISSION_DENIED")


def test_a_browser_session_works_and_no_credential_is_401(owner, client):
    assert get_today(owner.session_client())["tasks"]["total"] == 0
    assert_error(client.get(TODAY), 401, "UNAUTHENTICATED")


def get_with_oauth_token(rf, member, scopes: set[str]):
    """GET /today as an OAuth token with these scopes, bound to the member's practice (response.data: the wire's
    camelCase, already)."""
    from apps.today.api.views import TodayView

    class Token:
        def authenticate(self, request):
            credential = Credential(kind=OAUTH, scopes=frozenset(scopes), bound_organization_id=member.organization.id)
            return member.user, credential

    class ScopedTodayView(TodayView):
        authentication_classes = [Token]

    return ScopedTodayView.as_view()(rf.get(TODAY))


ALL_SECTIONS = {"appointments", "new_leads", "journeys"}
WIRE_NAME = {"appointments": "appointments", "new_leads": "newLeads", "journeys": "journeys"}


@pytest.mark.parametrize(
    ("scopes", "readable"),
    [
        ({"read"}, ALL_SECTIONS),
        ({"tasks.read", "appointments.read", "patients.write", "journeys.read"}, ALL_SECTIONS),
        ({"tasks.read"}, set()),
        ({"tasks.write", "patients.read"}, {"new_leads"}),
    ],
)
def test_oauth_tokens_see_the_sections_their_scopes_cover(owner, rf, scopes, readable):
    """The route is in the tasks area; every other section needs its own area's read access, else it is null."""
    make_appointment(owner.organization, NOW)

    response = get_with_oauth_token(rf, owner, scopes)

    assert response.status_code == 200
    assert response.data["tasks"]["total"] == 0
    assert {name for name in ALL_SECTIONS if response.data[WIRE_NAME[name]] is not None} == readable
    if "appointments" in readable:
        assert response.data["appointments"]["total"] == 1


def test_a_token_without_a_tasks_scope_is_refused(owner, rf):
    response = get_with_oauth_token(rf, owner, {"appointments.read", "patients.read", "journeys.read"})

    assert response.status_code == 403 and response.data["code"] == "INSUFFICIENT_SCOPE"


def test_value_rows_render_exactly_what_the_serializers_render(owner, member_factory, api):
    """GET /today renders the selectors' .values() rows with the areas' row renderers (apps.today.renderers);
    TodaySerializer (the schema) over model instances of the same rows gives the same bytes: tasks with and without
    patient, journey and due time; appointments with and without location and treatment; leads with nulls; journeys
    for each needs-action reason, assigned and unassigned."""
    import dataclasses

    from apps.appointments.models import Appointment
    from apps.appointments.selectors import appointment_rows
    from apps.core.renderers import CamelCaseJSONRenderer
    from apps.journeys.models import Journey, Treatment
    from apps.journeys.selectors import journey_rows
    from apps.patients.models import Patient
    from apps.tasks.models import Task
    from apps.today.api.serializers import TodaySerializer
    from apps.today.selectors import today_for_member
    from tests.factories import LocationFactory

    org, user = owner.organization, owner.user
    colleague = member_factory(role="front_desk", organization=org)
    patient = PatientFactory(organization=org, city="Roma", title="Dott.", preferred_name="Bea")
    journey = make_journey(org, user=user, assignee=user, in_stage_since=NOW - timedelta(days=9))
    make_journey(org, user=user, assignee=None, in_stage_since=NOW - timedelta(hours=3))
    make_journey(org, user=user, assignee=user, in_stage_since=NOW - timedelta(days=8), patient=patient)
    make_journey(org, user=user, assignee=colleague.user, in_stage_since=NOW - timedelta(days=30))
    make_task(org, assignee=user, due_at=NOW - timedelta(days=1), patient=patient, journey=journey, created_by=user)
    make_task(org, assignee=user, due_at=NOW.replace(microsecond=123456), description="Bring the X-rays — «all»")
    make_task(org, assignee=user, due_at=NOW + timedelta(hours=2), priority="high")
    treatment = Treatment.objects.for_org(org).first()
    make_appointment(org, NOW + timedelta(hours=1), location=LocationFactory(organization=org), treatment=treatment)
    make_appointment(org, NOW + timedelta(hours=2), notes="Bring the X-rays", journey=journey)
    make_lead(org, NOW - timedelta(hours=5), status="lead", email="", date_of_birth=None)
    make_lead(org, NOW - timedelta(days=1, hours=1), status="enquiry", city="Milano")

    body = api.get(TODAY)
    assert body.status_code == 200, body.content
    day = today_for_member(organization=org, user=user)
    assert all(len(section.items) >= 2 for section in (day.tasks, day.appointments, day.new_leads, day.journeys))

    def instances(model_rows, section):
        by_id = {record.id: record for record in model_rows.filter(id__in=[row["id"] for row in section.items])}
        return [by_id[row["id"]] for row in section.items]

    journeys = instances(journey_rows(Journey.objects.for_org(org)), day.journeys)
    for instance, row in zip(journeys, day.journeys.items, strict=True):
        instance.needs_action_reasons = row["needs_action_reasons"]
    assert {tuple(j.needs_action_reasons) for j in journeys} >= {("no_next_step",), ("stale",)}
    as_models = dataclasses.replace(
        day,
        tasks=dataclasses.replace(day.tasks, items=instances(Task.objects.for_org(org), day.tasks)),
        appointments=dataclasses.replace(
            day.appointments, items=instances(appointment_rows(Appointment.objects.for_org(org)), day.appointments)
        ),
        new_leads=dataclasses.replace(day.new_leads, items=instances(Patient.objects.for_org(org), day.new_leads)),
        journeys=dataclasses.replace(day.journeys, items=journeys),
    )
    expected = TodaySerializer(as_models, context={"embed_tags": False}).data
    assert body.content == CamelCaseJSONRenderer().render(expected)
