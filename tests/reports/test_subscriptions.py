"""Report subscriptions: one's own CRUD through HTTP, the due-time arithmetic, and delivery by the beat task to a real
SMTP server (aiosmtpd) with the CSV attached, exactly once per period."""

import csv
import io
from datetime import UTC, date, datetime, time
from zoneinfo import ZoneInfo

import pytest

from apps.accounts.models import Membership
from apps.reports import schedule, services, tasks
from apps.reports.models import ReportSubscription
from tests.conftest import make_member

pytestmark = pytest.mark.django_db

LE_28 = "Ensure this value is less than or equal to 28."
DAILY = {"reportKey": "deposits", "frequency": "daily", "sendTime": "07:00"}


def create(client, body=None):
    return client.post("/report-subscriptions", body or DAILY, content_type="application/json")


def count(organization) -> int:
    return ReportSubscription.objects.for_org(organization).count()


# --- CRUD -----------------------------------------------------------------------------------------------------------


def test_create_list_read_change_and_delete(api, owner, world):
    filters = {"leadSourceId": str(world.ids["google"])}
    response = create(api, {**DAILY, "reportKey": "lead-sources", "filters": filters})
    assert response.status_code == 201, response.content
    body = response.json()
    assert {k: body[k] for k in ("reportKey", "filters", "frequency", "sendTime", "weekday", "monthDay")} == {
        "reportKey": "lead-sources",
        "filters": {"leadSourceId": str(world.ids["google"])},
        "frequency": "daily",
        "sendTime": "07:00",
        "weekday": None,
        "monthDay": None,
    }
    assert (body["enabled"], body["disabledReason"], body["lastSentAt"]) == (True, "", None)
    assert body["nextDueAt"] == "2025-04-01T07:00:00.000000Z"  # now is 31 March 12:00 UTC

    assert [item["id"] for item in api.get("/report-subscriptions").json()["items"]] == [body["id"]]
    assert api.get(f"/report-subscriptions/{body['id']}").json() == body

    response = api.patch(
        f"/report-subscriptions/{body['id']}",
        {"frequency": "weekly", "weekday": 0, "sendTime": "08:30"},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["nextDueAt"] == "2025-04-07T08:30:00.000000Z"  # the next Monday
    assert response.json()["filters"] == {"leadSourceId": str(world.ids["google"])}

    assert api.delete(f"/report-subscriptions/{body['id']}").status_code == 204
    assert count(owner.organization) == 0


def test_changing_the_report_clears_its_filters(api, world):
    created = create(api, {**DAILY, "reportKey": "reviews", "filters": {"locationId": str(world.ids["location"])}})
    response = api.patch(
        f"/report-subscriptions/{created.json()['id']}", {"reportKey": "deposits"}, content_type="application/json"
    )
    assert response.status_code == 200
    assert response.json()["filters"] == {}


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({**DAILY, "reportKey": "revenue"}, {"reportKey": ['"revenue" is not a valid choice.']}),
        ({**DAILY, "frequency": "weekly"}, {"weekday": ["is required for a weekly subscription"]}),
        ({**DAILY, "frequency": "monthly"}, {"monthDay": ["is required for a monthly subscription"]}),
        ({**DAILY, "frequency": "monthly", "monthDay": 31}, {"monthDay": [LE_28]}),
        ({**DAILY, "sendTime": "7am"}, None),
        ({**DAILY, "filters": {"colour": "blue"}}, {"filters.colour": ["is not a filter of this report"]}),
        ({**DAILY, "enabled": "yes"}, {"enabled": ["must be a JSON boolean (true or false)"]}),
        ({**DAILY, "frequency": "hourly"}, {"frequency": ['"hourly" is not a valid choice.']}),
    ],
)
def test_bad_bodies_are_400_and_nothing_is_created(api, owner, world, body, fields):
    response = create(api, body)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "VALIDATION_ERROR"
    if fields is not None:
        assert response.json()["details"]["fields"] == fields
    assert count(owner.organization) == 0


def test_another_practices_id_in_the_filters_is_400(api, owner, outsider, world):
    from tests.factories import LocationFactory

    theirs = LocationFactory(organization=outsider.organization)
    response = create(api, {**DAILY, "reportKey": "reviews", "filters": {"locationId": str(theirs.id)}})
    assert response.status_code == 400
    assert response.json()["details"]["fields"] == {"filters.locationId": ["no such record in this practice"]}
    assert count(owner.organization) == 0


def test_at_most_twenty_per_member(api, owner, analyst, world):
    for _ in range(services.MAX_SUBSCRIPTIONS_PER_MEMBER):
        assert create(api).status_code == 201
    response = create(api)
    assert response.status_code == 409
    assert response.json() == {
        "code": "REPORT_SUBSCRIPTION_LIMIT",
        "message": "You already have the most report subscriptions a member may have.",
        "details": {"max": 20},
    }
    assert count(owner.organization) == 20
    assert create(analyst.api_client()).status_code == 201  # the limit is each member's own


def test_another_members_or_practices_subscription_is_404(api, owner, analyst, outsider, world):
    mine = create(api).json()["id"]
    for client in (analyst.api_client(), outsider.api_client()):
        for method in ("get", "patch", "delete"):
            response = getattr(client, method)(
                f"/report-subscriptions/{mine}", {"enabled": False}, content_type="application/json"
            )
            assert response.status_code == 404, (method, response.content)
            assert response.json()["code"] == "NOT_FOUND"
        assert client.get("/report-subscriptions").json()["items"] == []
    assert ReportSubscription.objects.for_org(owner.organization).get(id=mine).enabled is True


def test_front_desk_cannot_subscribe(owner, world):
    front_desk = make_member(role="front_desk", organization=owner.organization)
    response = create(front_desk.api_client())
    assert response.status_code == 403
    assert response.json()["code"] == "PERMISSION_DENIED"
    assert count(owner.organization) == 0


def test_list_reads_in_a_bounded_number_of_queries(api, world, django_assert_max_num_queries):
    for _ in range(5):
        create(api)
    with django_assert_max_num_queries(5):
        assert len(api.get("/report-subscriptions").json()["items"]) == 5


# --- when a subscription is due ---------------------------------------------------------------------------------------

ROME = ZoneInfo("Europe/Rome")


@pytest.mark.parametrize(
    ("frequency", "weekday", "month_day", "after", "expected"),
    [
        ("daily", None, None, datetime(2025, 3, 31, 5, 0, tzinfo=UTC), datetime(2025, 3, 31, 6, 0, tzinfo=UTC)),
        ("daily", None, None, datetime(2025, 3, 31, 6, 0, tzinfo=UTC), datetime(2025, 4, 1, 6, 0, tzinfo=UTC)),
        # The clocks went forward on 30 March: 08:00 in Rome was 07:00 UTC on the 29th, 06:00 UTC on the 30th.
        ("daily", None, None, datetime(2025, 3, 29, 8, 0, tzinfo=UTC), datetime(2025, 3, 30, 6, 0, tzinfo=UTC)),
        ("weekly", 4, None, datetime(2025, 3, 31, 12, 0, tzinfo=UTC), datetime(2025, 4, 4, 6, 0, tzinfo=UTC)),
        ("monthly", None, 1, datetime(2025, 3, 31, 12, 0, tzinfo=UTC), datetime(2025, 4, 1, 6, 0, tzinfo=UTC)),
        ("monthly", None, 28, datetime(2025, 2, 28, 7, 0, tzinfo=UTC), datetime(2025, 3, 28, 7, 0, tzinfo=UTC)),
    ],
)
def test_next_due_per_frequency_in_practice_time(frequency, weekday, month_day, after, expected):
    found = schedule.next_due(
        frequency=frequency, send_time=time(8, 0), weekday=weekday, month_day=month_day, tz=ROME, after=after
    )
    assert found == expected


@pytest.mark.parametrize(
    ("frequency", "sent_on", "period"),
    [
        ("daily", date(2025, 3, 1), (date(2025, 2, 28), date(2025, 2, 28))),
        ("weekly", date(2025, 3, 31), (date(2025, 3, 24), date(2025, 3, 30))),
        ("monthly", date(2025, 3, 1), (date(2025, 2, 1), date(2025, 2, 28))),
        ("monthly", date(2024, 3, 15), (date(2024, 2, 1), date(2024, 2, 29))),
        ("monthly", date(2025, 1, 5), (date(2024, 12, 1), date(2024, 12, 31))),
    ],
)
def test_the_period_reported_is_the_one_just_ended(frequency, sent_on, period):
    assert schedule.period_for(frequency=frequency, sent_on=sent_on) == period


# --- delivery ---------------------------------------------------------------------------------------------------------


def test_due_subscription_is_mailed_once_with_the_csv(api, owner, world, clock, smtp):
    created = create(api, {**DAILY, "reportKey": "deposits"}).json()
    clock.move_to(datetime(2025, 4, 1, 7, 2, tzinfo=UTC), tick=False)

    assert tasks.send_due_subscriptions() == {"sent": 1, "skipped": 0, "disabled": 0, "failed": 0}

    assert len(smtp.messages) == 1
    mail = smtp.messages[0]
    assert mail["To"] == owner.user.email
    assert mail["Subject"] == f"Deposits, 2025-03-31 to 2025-03-31 ({owner.organization.name})"
    parts = {part.get_content_type(): part for part in mail.walk() if not part.is_multipart()}
    assert "requested: 0" in parts["text/plain"].get_payload(decode=True).decode()
    assert "<h1>Deposits</h1>" in parts["text/html"].get_payload(decode=True).decode()
    attachment = parts["text/csv"]
    assert attachment.get_filename() == "deposits_2025-03-31_2025-03-31.csv"
    lines = list(csv.reader(io.StringIO(attachment.get_payload(decode=True).decode())))
    assert lines[0][:3] == ["currency", "requested", "paid"]

    row = ReportSubscription.objects.for_org(owner.organization).get(id=created["id"])
    assert row.last_period_end == date(2025, 3, 31)
    assert row.next_due_at == datetime(2025, 4, 2, 7, 0, tzinfo=UTC)
    assert row.last_sent_at == datetime(2025, 4, 1, 7, 2, tzinfo=UTC)

    # The task run again (a retry, a second beat): nothing is due, nothing is sent.
    assert tasks.send_due_subscriptions()["sent"] == 0
    assert len(smtp.messages) == 1


def test_a_period_already_sent_is_not_sent_again(api, owner, world, clock, smtp):
    created = create(api).json()
    clock.move_to(datetime(2025, 4, 1, 7, 2, tzinfo=UTC), tick=False)
    tasks.send_due_subscriptions()
    # A run that had sent but whose schedule update was lost sees the same period due again: it skips it.
    ReportSubscription.objects.for_org(owner.organization).filter(id=created["id"]).update(
        next_due_at=datetime(2025, 4, 1, 7, 0, tzinfo=UTC)
    )

    assert tasks.send_due_subscriptions() == {"sent": 0, "skipped": 1, "disabled": 0, "failed": 0}
    assert len(smtp.messages) == 1
    row = ReportSubscription.objects.for_org(owner.organization).get(id=created["id"])
    assert row.next_due_at == datetime(2025, 4, 2, 7, 0, tzinfo=UTC)


def test_the_mail_carries_the_figures_of_the_period(api, owner, world, clock, smtp):
    create(api, {"reportKey": "reviews", "frequency": "monthly", "monthDay": 1, "sendTime": "06:00"})
    clock.move_to(datetime(2025, 4, 1, 6, 1, tzinfo=UTC), tick=False)
    tasks.send_due_subscriptions()
    mail = smtp.messages[0]
    assert mail["Subject"] == f"Reviews, 2025-03-01 to 2025-03-31 ({owner.organization.name})"
    text = next(p for p in mail.walk() if p.get_content_type() == "text/plain").get_payload(decode=True).decode()
    assert "count: 4" in text and "averageRating: 3.75" in text


def test_nothing_is_sent_before_the_moment(api, world, clock, smtp):
    create(api)
    clock.move_to(datetime(2025, 4, 1, 6, 59, tzinfo=UTC), tick=False)
    assert tasks.send_due_subscriptions()["sent"] == 0
    assert smtp.messages == []


def test_a_member_who_left_gets_nothing(analyst, world, clock, smtp):
    created = create(analyst.api_client()).json()
    Membership.objects.for_org(analyst.organization).filter(id=analyst.membership.id).delete()
    clock.move_to(datetime(2025, 4, 1, 7, 2, tzinfo=UTC), tick=False)

    assert tasks.send_due_subscriptions() == {"sent": 0, "skipped": 0, "disabled": 1, "failed": 0}
    assert smtp.messages == []
    row = ReportSubscription.objects.for_org(analyst.organization).get(id=created["id"])
    assert (row.enabled, row.disabled_reason) == (False, "MEMBER_LEFT")


def test_a_member_who_lost_report_read_gets_nothing(analyst, world, clock, smtp):
    created = create(analyst.api_client()).json()
    Membership.objects.for_org(analyst.organization).filter(id=analyst.membership.id).update(role="front_desk")
    clock.move_to(datetime(2025, 4, 1, 7, 2, tzinfo=UTC), tick=False)

    assert tasks.send_due_subscriptions()["disabled"] == 1
    assert smtp.messages == []
    row = ReportSubscription.objects.for_org(analyst.organization).get(id=created["id"])
    assert (row.enabled, row.disabled_reason) == (False, "NO_ACCESS")


def test_a_failed_send_stays_due(api, owner, world, clock, settings):
    created = create(api).json()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 1  # nothing listens
    clock.move_to(datetime(2025, 4, 1, 7, 2, tzinfo=UTC), tick=False)

    assert tasks.send_due_subscriptions() == {"sent": 0, "skipped": 0, "disabled": 0, "failed": 1}
    row = ReportSubscription.objects.for_org(owner.organization).get(id=created["id"])
    assert (row.next_due_at, row.last_sent_at) == (datetime(2025, 4, 1, 7, 0, tzinfo=UTC), None)


def test_disabled_subscriptions_are_not_sent_and_enabling_reschedules(api, owner, world, clock, smtp):
    created = create(api, {**DAILY, "enabled": False}).json()
    clock.move_to(datetime(2025, 4, 3, 9, 0, tzinfo=UTC), tick=False)
    assert tasks.send_due_subscriptions()["sent"] == 0
    response = api.patch(f"/report-subscriptions/{created['id']}", {"enabled": True}, content_type="application/json")
    assert response.json()["nextDueAt"] == "2025-04-04T07:00:00.000000Z"
    assert smtp.messages == []
