"""Reports through HTTP: every figure checked against the hand-computed practice of conftest.py (the outsider
practice's March records must never be counted), filters, ranges, the CSV, the cache, refusals."""

import csv
import io

import pytest
from django.core.cache import cache

from apps.patients.models import Patient
from tests.conftest import make_member
from tests.reports.conftest import MARCH

pytestmark = pytest.mark.django_db


def get(client, path):
    response = client.get(path)
    assert response.status_code == 200, response.content
    return response.json()


def rows_of(body, group=None):
    return [row for row in body["rows"] if group is None or row.get("group") == group]


# --- the catalogue ----------------------------------------------------------------------------------------------------


def test_catalogue_lists_every_report_with_filters_and_columns(api, world):
    body = get(api, "/reports")

    assert [item["key"] for item in body["items"]] == [
        "lead-sources",
        "pipeline",
        "speed-to-lead",
        "appointments",
        "campaigns",
        "deposits",
        "reviews",
    ]
    lead = body["items"][0]
    assert [f["name"] for f in lead["filters"]] == ["leadSourceId", "locationId"]
    assert lead["columns"][:3] == ["sourceId", "source", "enquiries"]
    appointments = body["items"][3]
    assert appointments["filters"][1]["choices"][0] == "consultation"


# --- each report's figures ----------------------------------------------------------------------------------------


def test_lead_sources_funnel_and_conversion(api, world):
    body = get(api, f"/reports/lead-sources?{MARCH}")

    assert body["figures"] == {
        "enquiries": 7,
        "leads": 6,
        "patients": 4,
        "treatmentAccepted": 2,
        "leadRate": 0.8571,
        "patientRate": 0.5714,
        "acceptedRate": 0.2857,
    }
    assert body["rows"] == [
        {
            "sourceId": str(world.ids["google"]),
            "source": "Google",
            "enquiries": 4,
            "leads": 3,
            "patients": 2,
            "treatmentAccepted": 1,
            "leadRate": 0.75,
            "patientRate": 0.5,
            "acceptedRate": 0.25,
        },
        {
            "sourceId": str(world.ids["referral"]),
            "source": "Referral",
            "enquiries": 2,
            "leads": 2,
            "patients": 2,
            "treatmentAccepted": 1,
            "leadRate": 1.0,
            "patientRate": 1.0,
            "acceptedRate": 0.5,
        },
        {
            "sourceId": None,
            "source": "(no source)",
            "enquiries": 1,
            "leads": 1,
            "patients": 0,
            "treatmentAccepted": 0,
            "leadRate": 1.0,
            "patientRate": 0.0,
            "acceptedRate": 0.0,
        },
    ]
    assert (body["from"], body["to"], body["timezone"]) == ("2025-03-01", "2025-03-31", "UTC")


def test_lead_sources_filtered_by_source_and_location(api, world):
    body = get(api, f"/reports/lead-sources?{MARCH}&leadSourceId={world.ids['referral']}")
    assert [row["source"] for row in body["rows"]] == ["Referral"]
    assert body["figures"]["enquiries"] == 2
    assert body["filters"] == {"leadSourceId": str(world.ids["referral"])}

    body = get(api, f"/reports/lead-sources?{MARCH}&locationId={world.ids['location']}")
    assert body["figures"]["enquiries"] == 1 and body["figures"]["treatmentAccepted"] == 1


def test_pipeline_open_value_and_stage_durations(api, world):
    body = get(api, f"/reports/pipeline?{MARCH}")

    assert body["figures"] == {
        "pipelineId": str(world.ids["pipeline"]),
        "pipeline": "Sales",
        "openCount": 3,
        "won": 2,
        "lost": 1,
        "values": [{"currency": "EUR", "openMinor": 15050, "wonMinor": 120000}],
    }
    assert body["rows"] == [
        {
            "stageId": str(world.ids["new"]),
            "stage": "New",
            "currency": "EUR",
            "openCount": 2,
            "valueMinor": 15050,
            "medianStageSeconds": 10800.0,
            "averageStageSeconds": 10800.0,
        },
        {
            "stageId": str(world.ids["consult"]),
            "stage": "Consult",
            "currency": "EUR",
            "openCount": 1,
            "valueMinor": 0,
            "medianStageSeconds": 86400.0,
            "averageStageSeconds": 86400.0,
        },
    ]


def test_pipeline_filters_by_pipeline_and_member(api, owner, world):
    body = get(api, f"/reports/pipeline?{MARCH}&pipelineId={world.ids['other_pipeline']}")
    assert body["figures"]["pipeline"] == "Implants"
    assert [(row["stage"], row["openCount"], row["valueMinor"]) for row in body["rows"]] == [("Enquiry", 1, 70000)]

    body = get(api, f"/reports/pipeline?{MARCH}&memberId={owner.user.id}")
    assert body["figures"]["openCount"] == 1 and body["figures"]["won"] == 0
    # A stage without open journeys keeps its row, empty.
    assert [(row["stage"], row["openCount"], row["currency"]) for row in body["rows"]] == [
        ("New", 1, "EUR"),
        ("Consult", 0, None),
    ]


def test_speed_to_lead_median_p90_and_shares(api, owner, analyst, world):
    body = get(api, f"/reports/speed-to-lead?{MARCH}")

    # First contacts: 240 s (p1), 1800 s (p2; the inbound message before it is not a contact), 7200 s (p3).
    assert body["figures"] == {
        "leads": 7,
        "contacted": 3,
        "medianSeconds": 1800.0,
        "p90Seconds": 6120.0,
        "within5Minutes": 0.1429,
        "within1Hour": 0.2857,
    }
    sources = {row["label"]: row for row in rows_of(body, "source")}
    assert sources["Google"] | {"key": None} == {
        "group": "source",
        "key": None,
        "label": "Google",
        "leads": 4,
        "contacted": 3,
        "medianSeconds": 1800.0,
        "p90Seconds": 6120.0,
        "within5Minutes": 0.25,
        "within1Hour": 0.5,
    }
    assert (sources["Referral"]["contacted"], sources["Referral"]["medianSeconds"]) == (0, None)
    assert sources["(no source)"]["leads"] == 1
    members = {row["key"]: (row["leads"], row["contacted"], row["medianSeconds"]) for row in rows_of(body, "member")}
    assert members == {str(owner.user.id): (1, 1, 240.0), str(analyst.user.id): (1, 1, 7200.0), None: (5, 1, 1800.0)}

    only_analyst = get(api, f"/reports/speed-to-lead?{MARCH}&memberId={analyst.user.id}")
    assert only_analyst["figures"]["leads"] == 1 and only_analyst["figures"]["medianSeconds"] == 7200.0


def test_appointments_outcomes_per_period_practitioner_and_type(api, world):
    body = get(api, f"/reports/appointments?{MARCH}&period=month")

    assert body["figures"] == {
        "booked": 5,
        "scheduled": 1,
        "attended": 2,
        "noShow": 1,
        "cancelled": 1,
        "noShowRate": 0.3333,
    }
    assert rows_of(body, "period") == [
        {
            "group": "period",
            "key": "2025-03-01",
            "label": "2025-03-01",
            "booked": 5,
            "scheduled": 1,
            "attended": 2,
            "noShow": 1,
            "cancelled": 1,
            "noShowRate": 0.3333,
        }
    ]
    practitioners = {row["label"]: row for row in rows_of(body, "practitioner")}
    assert (practitioners["Dr X"]["booked"], practitioners["Dr X"]["attended"], practitioners["Dr X"]["noShow"]) == (
        3,
        2,
        1,
    )
    assert (practitioners["Dr Y"]["cancelled"], practitioners["Dr Y"]["scheduled"]) == (1, 1)
    assert {row["key"]: row["booked"] for row in rows_of(body, "type")} == {
        "consultation": 3,
        "hygiene": 1,
        "treatment": 1,
    }


def test_appointments_filters_and_weekly_periods(api, world):
    body = get(api, f"/reports/appointments?{MARCH}&practitionerId={world.ids['dr_y']}")
    assert body["figures"]["booked"] == 2 and body["figures"]["noShowRate"] is None
    # Weeks start on Monday: 3 March (3 appointments), 10 March (1), 24 March (1).
    assert [(row["key"], row["booked"]) for row in rows_of(get(api, f"/reports/appointments?{MARCH}"), "period")] == [
        ("2025-03-03", 3),
        ("2025-03-10", 1),
        ("2025-03-24", 1),
    ]
    body = get(api, f"/reports/appointments?{MARCH}&appointmentType=hygiene")
    assert body["figures"]["booked"] == 1


def test_campaigns_recipient_outcomes_and_channel_messages(api, world):
    body = get(api, f"/reports/campaigns?{MARCH}")

    assert rows_of(body, "campaign") == [
        {
            "group": "campaign",
            "key": str(world.ids["campaign"]),
            "label": "Spring",
            "channel": "sms",
            "recipients": 4,
            "skipped": 1,
            "sent": 2,
            "delivered": 2,
            "read": 1,
            "failed": 1,
            "replied": 1,
            "unsubscribed": 1,
        }
    ]
    assert rows_of(body, "channel") == [
        {
            "group": "channel",
            "key": "sms",
            "label": "sms",
            "channel": "sms",
            "outbound": 3,
            "queued": 0,
            "sent": 2,
            "delivered": 2,
            "read": 1,
            "failed": 1,
            "inbound": 1,
        }
    ]
    assert body["figures"]["campaigns"] == 1 and body["figures"]["messagesInbound"] == 1
    assert get(api, f"/reports/campaigns?{MARCH}&channel=email")["rows"] == []


def test_deposits_counts_and_amounts(api, world):
    body = get(api, f"/reports/deposits?{MARCH}")

    assert body["figures"] == {
        "requested": 4,
        "paid": 2,
        "expired": 1,
        "cancelled": 0,
        "refunded": 1,
        "outstanding": 1,
        "paidRate": 0.5,
    }
    assert body["rows"] == [
        {
            "currency": "EUR",
            "requested": 4,
            "paid": 2,
            "expired": 1,
            "cancelled": 0,
            "refunded": 1,
            "outstanding": 1,
            "requestedAmount": 14000,
            "paidAmount": 8000,
            "refundedAmount": 3000,
        }
    ]


def test_reviews_average_distribution_and_response_rate(api, world):
    body = get(api, f"/reports/reviews?{MARCH}")

    assert body["figures"] == {"count": 4, "averageRating": 3.75, "responded": 1, "responseRate": 0.25}
    assert body["rows"] == [
        {"rating": 5, "count": 2, "share": 0.5},
        {"rating": 4, "count": 1, "share": 0.25},
        {"rating": 3, "count": 0, "share": 0.0},
        {"rating": 2, "count": 0, "share": 0.0},
        {"rating": 1, "count": 1, "share": 0.25},
    ]


# --- ranges -------------------------------------------------------------------------------------------------------


def test_default_range_is_the_last_30_days_in_practice_time(api, owner, world):
    body = get(api, "/reports/deposits")
    assert (body["from"], body["to"]) == ("2025-03-02", "2025-03-31")
    assert body["figures"]["requested"] == 4

    owner.organization.timezone = "Pacific/Kiritimati"  # UTC+14: already 1 April there
    owner.organization.save(update_fields=["timezone"])
    body = get(api, "/reports/deposits?refresh=true")
    assert (body["from"], body["to"], body["timezone"]) == ("2025-03-03", "2025-04-01", "Pacific/Kiritimati")


def test_range_days_are_reckoned_in_the_practice_zone(api, owner, world):
    owner.organization.timezone = "America/New_York"  # 2 March 10:00 UTC is 2 March 05:00 there
    owner.organization.save(update_fields=["timezone"])
    assert get(api, "/reports/deposits?from=2025-03-02&to=2025-03-02")["figures"]["requested"] == 1
    # 1 March in New York ends at 2 March 05:00 UTC: the deposit of 2 March 10:00 UTC is not in it.
    assert get(api, "/reports/deposits?from=2025-03-01&to=2025-03-01")["figures"]["requested"] == 0


def test_a_one_day_range_counts_that_day_only(api, world):
    body = get(api, "/reports/lead-sources?from=2025-03-02&to=2025-03-02")
    assert body["figures"]["enquiries"] == 1


@pytest.mark.parametrize(
    ("query", "field", "problem"),
    [
        ("from=2025-02-30", "from", "must be an ISO date (YYYY-MM-DD)"),
        ("to=yesterday", "to", "must be an ISO date (YYYY-MM-DD)"),
        ("from=2025-03-10&to=2025-03-01", "from", "must be on or before `to`"),
        ("from=2024-01-01&to=2025-03-01", "to", "the range may cover at most 366 days"),
        ("refresh=yes", "refresh", "must be true or false"),
        ("colour=blue", "colour", "is not a parameter of this report"),
        ("leadSourceId=nope", "leadSourceId", "must be a UUID"),
        ("leadSourceId=7b1f5d0e-0000-4000-8000-000000000000", "leadSourceId", "no such record in this practice"),
    ],
)
def test_bad_parameters_answer_400_naming_them(api, world, query, field, problem):
    response = api.get(f"/reports/lead-sources?{query}")

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert body["details"] == {"fields": {field: [problem]}}
    assert cache.keys("*reports:*") == []  # nothing computed, nothing cached


def test_bad_choice_and_a_filter_of_another_report(api, world):
    response = api.get("/reports/appointments?period=year")
    assert response.status_code == 400
    assert response.json()["details"]["fields"] == {"period": ["must be one of: day, week, month"]}
    response = api.get("/reports/deposits?leadSourceId=7b1f5d0e-0000-4000-8000-000000000000")
    assert response.json()["details"]["fields"] == {"leadSourceId": ["is not a parameter of this report"]}


def test_another_practices_id_in_a_filter_is_400(api, outsider, world):
    theirs = make_member(role="owner", organization=outsider.organization)
    from tests.factories import LeadSourceFactory

    source = LeadSourceFactory(organization=theirs.organization)
    response = api.get(f"/reports/lead-sources?leadSourceId={source.id}")
    assert response.status_code == 400
    assert response.json()["details"]["fields"] == {"leadSourceId": ["no such record in this practice"]}


def test_unknown_report_is_404(api, world):
    for path in ("/reports/revenue", "/reports/revenue/export"):
        response = api.get(path)
        assert response.status_code == 404
        assert response.json() == {"code": "REPORT_NOT_FOUND", "message": "No such report.", "details": {}}


# --- CSV --------------------------------------------------------------------------------------------------------------


def test_csv_export_has_the_columns_and_rows(api, world):
    response = api.get(f"/reports/lead-sources/export?{MARCH}")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="lead-sources_2025-03-01_2025-03-31.csv"'
    lines = list(csv.reader(io.StringIO(response.content.decode())))
    assert lines == [
        [
            "sourceId",
            "source",
            "enquiries",
            "leads",
            "patients",
            "treatmentAccepted",
            "leadRate",
            "patientRate",
            "acceptedRate",
        ],
        [str(world.ids["google"]), "Google", "4", "3", "2", "1", "0.75", "0.5", "0.25"],
        [str(world.ids["referral"]), "Referral", "2", "2", "2", "1", "1.0", "1.0", "0.5"],
        ["", "(no source)", "1", "1", "0", "0", "1.0", "0.0", "0.0"],
    ]


def test_csv_cells_are_spreadsheet_safe(api, owner, world):
    from apps.patients.models import LeadSource

    LeadSource.objects.for_org(owner.organization).filter(id=world.ids["google"]).update(name="=HYPERLINK(1)")
    lines = list(csv.reader(io.StringIO(api.get(f"/reports/lead-sources/export?{MARCH}").content.decode())))
    assert lines[1][1] == "'=HYPERLINK(1)"


@pytest.mark.parametrize("key", ["pipeline", "speed-to-lead", "appointments", "campaigns", "deposits", "reviews"])
def test_every_report_exports_its_rows(api, world, key):
    body = get(api, f"/reports/{key}?{MARCH}")
    lines = list(csv.reader(io.StringIO(api.get(f"/reports/{key}/export?{MARCH}").content.decode())))
    assert lines[0] == body["columns"]
    assert len(lines) == 1 + len(body["rows"])


def test_export_errors_are_json(api, world):
    response = api.get("/reports/deposits/export?from=bad")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "VALIDATION_ERROR"


# --- cache ------------------------------------------------------------------------------------------------------------


def test_answers_are_cached_until_refresh(api, owner, world, django_assert_max_num_queries):
    first = get(api, f"/reports/lead-sources?{MARCH}")
    assert first["cached"] is False
    assert first["generatedAt"] == "2025-03-31T12:00:00.000000Z"

    Patient.objects.for_org(owner.organization).filter(id=world.ids["p1"]).update(status="patient")
    with django_assert_max_num_queries(4):  # the credential and membership only: no report query
        second = get(api, f"/reports/lead-sources?{MARCH}")
    assert second["cached"] is True
    assert second["figures"] == first["figures"]

    # Other parameters are another answer; the same in another order is the same one.
    assert get(api, "/reports/lead-sources?to=2025-03-31&from=2025-03-01")["cached"] is True
    assert get(api, "/reports/lead-sources?from=2025-03-02&to=2025-03-31")["cached"] is False

    fresh = get(api, f"/reports/lead-sources?{MARCH}&refresh=true")
    assert fresh["cached"] is False
    assert fresh["figures"]["patients"] == 5
    assert get(api, f"/reports/lead-sources?{MARCH}")["figures"]["patients"] == 5


def test_the_cache_is_per_practice(api, outsider, world):
    get(api, f"/reports/deposits?{MARCH}")
    theirs = get(outsider.api_client(), f"/reports/deposits?{MARCH}")
    assert theirs["cached"] is False
    assert theirs["figures"]["requested"] == 1  # their own deposit only


# --- access and tenancy -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["front_desk", "telesales", "dentist"])
@pytest.mark.parametrize("path", ["/reports", "/reports/deposits", "/reports/deposits/export"])
def test_roles_without_report_read_are_refused(owner, world, role, path):
    member = make_member(role=role, organization=owner.organization)
    response = member.api_client().get(path)
    assert response.status_code == 403
    assert response.json()["code"] == "PERMISSION_DENIED"
    assert cache.keys("*reports:*") == []


def test_analyst_and_manager_read_reports(owner, analyst, world):
    manager = make_member(role="manager", organization=owner.organization)
    assert get(analyst.api_client(), f"/reports/deposits?{MARCH}")["figures"]["requested"] == 4
    assert get(manager.api_client(), f"/reports/reviews?{MARCH}")["figures"]["count"] == 4


def test_without_credentials_401(world):
    from django.test import Client

    assert Client().get("/reports").status_code == 401


@pytest.mark.parametrize("key", ["lead-sources", "pipeline", "speed-to-lead", "appointments", "deposits", "reviews"])
def test_outsider_sees_only_their_own_figures(outsider, world, key):
    body = get(outsider.api_client(), f"/reports/{key}?{MARCH}")
    expected = {
        "lead-sources": ("enquiries", 1),
        "pipeline": ("openCount", 0),
        "speed-to-lead": ("contacted", 1),
        "appointments": ("noShow", 1),
        "deposits": ("requested", 1),
        "reviews": ("count", 0),
    }[key]
    assert body["figures"][expected[0]] == expected[1]


@pytest.mark.parametrize("key", ["lead-sources", "pipeline", "speed-to-lead", "appointments", "campaigns", "deposits"])
def test_each_report_reads_in_a_bounded_number_of_queries(api, world, key, django_assert_max_num_queries):
    with django_assert_max_num_queries(12):
        get(api, f"/reports/{key}?{MARCH}&refresh=true")
