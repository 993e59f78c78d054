"""The reports: each a key, a title, its filters, its columns and how it is computed from the source areas'
aggregate reads (their public modules). A report answers {figures, rows}: figures are the headline numbers, rows the
table (also the CSV). Rows of several kinds in one report say which in their `group` column."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from apps.accounts.models import Membership
from apps.appointments.public import outcomes_between
from apps.campaigns.public import campaigns_launched, recipient_outcomes
from apps.conversations.public import message_outcomes
from apps.core.naming import to_camel
from apps.deposits.public import deposit_outcomes
from apps.journeys.public import (
    closed_between,
    open_by_stage,
    open_stages,
    pipelines_of,
    won_patients_by_lead_source,
)
from apps.patients.public import first_contact_times, funnel_by_lead_source, names_of
from apps.reports import params as p
from apps.reputation.public import review_summary

NO_SOURCE = "(no source)"
NO_MEMBER = "(no member)"


@dataclass(frozen=True)
class Context:
    organization: object
    params: p.Params
    now: datetime

    @property
    def start(self):
        return self.params.range.start

    @property
    def end(self):
        return self.params.range.end


@dataclass(frozen=True)
class Report:
    key: str
    title: str
    description: str
    filters: tuple[p.Filter, ...]
    columns: tuple[str, ...]  # snake_case; camelCase on the wire and in the CSV header
    compute: Callable[[Context], tuple[dict, list[dict]]]

    def describe(self) -> dict:
        return {
            "key": self.key,
            "title": self.title,
            "description": self.description,
            "filters": [spec.schema() for spec in self.filters],
            "columns": [to_camel(name) for name in self.columns],
        }


def rate(part, whole) -> float | None:
    return round(part / whole, 4) if whole else None


def seconds(value) -> float | None:
    return None if value is None else round(float(value), 1)


def minor(value) -> int:
    """A journey value (Decimal, two places) in minor units."""
    return int((Decimal(value or 0) * 100).to_integral_value())


def member_names(organization) -> dict:
    rows = Membership.objects.for_org(organization).values_list("user_id", "user__name", "user__email")
    return {user_id: name or email for user_id, name, email in rows}


# --- lead sources and conversion ----------------------------------------------------------------------------------


def lead_sources(ctx: Context) -> tuple[dict, list[dict]]:
    source, location = ctx.params.value("leadSourceId"), ctx.params.value("locationId")
    window = {"organization": ctx.organization, "start": ctx.start, "end": ctx.end}
    funnel = funnel_by_lead_source(**window, lead_source_id=source, location_id=location)
    accepted = won_patients_by_lead_source(**window, lead_source_id=source, location_id=location)
    names = names_of(organization=ctx.organization, kind="lead_source")
    rows = [
        _funnel_row(row["lead_source_id"], names.get(row["lead_source_id"], NO_SOURCE), row, accepted) for row in funnel
    ]
    rows.sort(key=lambda row: (-row["enquiries"], row["source"]))
    totals = {name: sum(row[name] for row in rows) for name in ("enquiries", "leads", "patients", "treatment_accepted")}
    return _with_rates(totals), rows


def _funnel_row(source_id, name, row, accepted) -> dict:
    counts = {
        "enquiries": row["enquiries"],
        "leads": row["leads"],
        "patients": row["patients"],
        "treatment_accepted": accepted.get(source_id, 0),
    }
    return {"source_id": source_id and str(source_id), "source": name, **_with_rates(counts)}


def _with_rates(counts: dict) -> dict:
    return counts | {
        "lead_rate": rate(counts["leads"], counts["enquiries"]),
        "patient_rate": rate(counts["patients"], counts["enquiries"]),
        "accepted_rate": rate(counts["treatment_accepted"], counts["enquiries"]),
    }


# --- pipeline -----------------------------------------------------------------------------------------------------


def pipeline(ctx: Context) -> tuple[dict, list[dict]]:
    pipelines = pipelines_of(organization=ctx.organization)
    chosen = ctx.params.value("pipelineId")
    current = next((row for row in pipelines if chosen is None or row["id"] == chosen), None)
    if current is None:  # a practice without pipelines yet
        return {"pipeline_id": None, "pipeline": None, "open_count": 0, "won": 0, "lost": 0, "values": []}, []
    member = ctx.params.value("memberId")
    scope = {"organization": ctx.organization, "pipeline_id": current["id"], "assignee_id": member}
    open_rows = open_by_stage(**scope, now=ctx.now)
    closed = closed_between(**scope, start=ctx.start, end=ctx.end)
    by_stage: dict = {}
    for row in open_rows:
        by_stage.setdefault(row["stage_id"], []).append(row)
    rows = []
    for stage in open_stages(organization=ctx.organization, pipeline_id=current["id"]):
        for row in by_stage.get(stage["id"]) or [None]:
            rows.append(
                {
                    "stage_id": str(stage["id"]),
                    "stage": stage["name"],
                    "currency": row["currency"] if row else None,
                    "open_count": row["open_count"] if row else 0,
                    "value_minor": minor(row["value"]) if row else 0,
                    "median_stage_seconds": seconds(row["median_seconds"]) if row else None,
                    "average_stage_seconds": seconds(row["average_seconds"]) if row else None,
                }
            )
    values: dict = {}
    for row in open_rows:
        values.setdefault(row["currency"], {"currency": row["currency"], "open_minor": 0, "won_minor": 0})
        values[row["currency"]]["open_minor"] += minor(row["value"])
    for row in closed:
        values.setdefault(row["currency"], {"currency": row["currency"], "open_minor": 0, "won_minor": 0})
        values[row["currency"]]["won_minor"] += minor(row["won_value"])
    figures = {
        "pipeline_id": str(current["id"]),
        "pipeline": current["name"],
        "open_count": sum(row["open_count"] for row in open_rows),
        "won": sum(row["won"] for row in closed),
        "lost": sum(row["lost"] for row in closed),
        "values": [values[currency] for currency in sorted(values)],
    }
    return figures, rows


SPEED_COLUMNS = (
    *("group", "key", "label", "leads", "contacted"),
    *("median_seconds", "p90_seconds", "within_5_minutes", "within_1_hour"),
)

# --- speed to lead ------------------------------------------------------------------------------------------------


def speed_to_lead(ctx: Context) -> tuple[dict, list[dict]]:
    found = first_contact_times(
        organization=ctx.organization,
        start=ctx.start,
        end=ctx.end,
        lead_source_id=ctx.params.value("leadSourceId"),
        member_user_id=ctx.params.value("memberId"),
    )
    sources = names_of(organization=ctx.organization, kind="lead_source")
    members = member_names(ctx.organization)
    figures: dict = {}
    rows = []
    for row in found:
        shaped = {
            "leads": row["leads"],
            "contacted": row["contacted"],
            "median_seconds": seconds(row["median_seconds"]),
            "p90_seconds": seconds(row["p90_seconds"]),
            "within_5_minutes": rate(row["within_5_minutes"], row["leads"]),
            "within_1_hour": rate(row["within_1_hour"], row["leads"]),
        }
        if row["group"] == "all":
            figures = shaped
            continue
        names, missing = (sources, NO_SOURCE) if row["group"] == "source" else (members, NO_MEMBER)
        key = row["key"]
        rows.append({"group": row["group"], "key": key and str(key), "label": names.get(key, missing), **shaped})
    rows.sort(key=lambda row: (row["group"] != "source", -row["leads"], row["label"]))
    return figures, rows


# --- appointments -------------------------------------------------------------------------------------------------

OUTCOMES = ("booked", "scheduled", "attended", "no_show", "cancelled")


def appointments(ctx: Context) -> tuple[dict, list[dict]]:
    found = outcomes_between(
        organization=ctx.organization,
        start=ctx.start,
        end=ctx.end,
        tzinfo=ctx.params.range.tz,
        period=ctx.params.value("period") or "week",
        practitioner_id=ctx.params.value("practitionerId"),
        appointment_type=ctx.params.value("appointmentType"),
        location_id=ctx.params.value("locationId"),
    )
    practitioners = names_of(organization=ctx.organization, kind="practitioner")

    def shaped(group, key, label, row) -> dict:
        counts = {name: row[name] for name in OUTCOMES}
        return {"group": group, "key": key, "label": label, **counts, "no_show_rate": _no_show_rate(counts)}

    rows = [shaped("period", str(r["period"]), str(r["period"]), r) for r in found["period"]]
    rows += sorted(
        (
            shaped("practitioner", str(r["practitioner_id"]), practitioners.get(r["practitioner_id"], ""), r)
            for r in found["practitioner"]
        ),
        key=lambda row: (-row["booked"], row["label"]),
    )
    rows += [shaped("type", r["appointment_type"], r["appointment_type"], r) for r in found["type"]]
    counts = {name: found["total"][name] for name in OUTCOMES}
    return counts | {"no_show_rate": _no_show_rate(counts)}, rows


def _no_show_rate(counts: dict) -> float | None:
    """No-shows among the appointments that came due and were not cancelled (attended or missed)."""
    return rate(counts["no_show"], counts["attended"] + counts["no_show"])


# --- campaigns and messaging ----------------------------------------------------------------------------------------

CAMPAIGN_COUNTS = ("recipients", "skipped", "sent", "delivered", "read", "failed", "replied", "unsubscribed")
MESSAGE_COUNTS = ("outbound", "queued", "sent", "delivered", "read", "failed", "inbound")


def campaigns(ctx: Context) -> tuple[dict, list[dict]]:
    channel = ctx.params.value("channel")
    launched = campaigns_launched(organization=ctx.organization, start=ctx.start, end=ctx.end)
    launched = [row for row in launched if channel is None or row["channel"] == channel]
    outcomes = recipient_outcomes(organization=ctx.organization, campaign_ids=[row["id"] for row in launched])
    rows = []
    for campaign in launched:
        counts = outcomes.get(campaign["id"]) or dict.fromkeys(CAMPAIGN_COUNTS, 0)
        rows.append(
            {
                "group": "campaign",
                "key": str(campaign["id"]),
                "label": campaign["name"],
                "channel": campaign["channel"],
                **{name: counts[name] for name in CAMPAIGN_COUNTS},
            }
        )
    messages = message_outcomes(organization=ctx.organization, start=ctx.start, end=ctx.end, channel=channel)
    for row in messages:
        rows.append(
            {
                "group": "channel",
                "key": row["channel"],
                "label": row["channel"],
                "channel": row["channel"],
                **{name: row[name] for name in MESSAGE_COUNTS},
            }
        )
    campaign_rows = [row for row in rows if row["group"] == "campaign"]
    figures = {
        "campaigns": len(campaign_rows),
        **{name: sum(row[name] for row in campaign_rows) for name in CAMPAIGN_COUNTS},
        "messages_outbound": sum(row["outbound"] for row in messages),
        "messages_inbound": sum(row["inbound"] for row in messages),
    }
    return figures, rows


# --- deposits -----------------------------------------------------------------------------------------------------

DEPOSIT_COUNTS = ("requested", "paid", "expired", "cancelled", "refunded", "outstanding")
DEPOSIT_AMOUNTS = ("requested_amount", "paid_amount", "refunded_amount")


def deposits(ctx: Context) -> tuple[dict, list[dict]]:
    found = deposit_outcomes(organization=ctx.organization, start=ctx.start, end=ctx.end)
    rows = [
        {"currency": row["currency"], **{name: row[name] for name in DEPOSIT_COUNTS + DEPOSIT_AMOUNTS}} for row in found
    ]
    figures = {name: sum(row[name] for row in rows) for name in DEPOSIT_COUNTS}
    figures["paid_rate"] = rate(figures["paid"], figures["requested"])
    return figures, rows


# --- reviews ------------------------------------------------------------------------------------------------------


def reviews(ctx: Context) -> tuple[dict, list[dict]]:
    found = review_summary(
        organization=ctx.organization, start=ctx.start, end=ctx.end, location_id=ctx.params.value("locationId")
    )
    average = found["average_rating"]
    figures = {
        "count": found["count"],
        "average_rating": None if average is None else round(float(average), 2),
        "responded": found["responded"],
        "response_rate": rate(found["responded"], found["count"]),
    }
    rows = [
        {"rating": n, "count": found[f"stars_{n}"], "share": rate(found[f"stars_{n}"], found["count"])}
        for n in range(5, 0, -1)
    ]
    return figures, rows


REPORTS: dict[str, Report] = {
    report.key: report
    for report in (
        Report(
            "lead-sources",
            "Lead sources and conversion",
            "Records created in the range, per lead source: enquiries (every record), leads (went past enquiry), "
            "patients (became a patient) and treatment accepted (has a won journey), with each as a share of "
            "enquiries. An archived record counts by the status it had; merged duplicates are left out.",
            (p.LEAD_SOURCE, p.LOCATION),
            (
                "source_id",
                "source",
                "enquiries",
                "leads",
                "patients",
                "treatment_accepted",
                "lead_rate",
                "patient_rate",
                "accepted_rate",
            ),
            lead_sources,
        ),
        Report(
            "pipeline",
            "Pipeline value and stage durations",
            "The pipeline's open journeys now, per open stage and currency: how many, their estimated value in "
            "minor units, and how long they have been in the stage so far (median and average seconds). Figures "
            "add the journeys won and lost in the range. memberId narrows to one assignee.",
            (p.PIPELINE, p.MEMBER),
            (
                "stage_id",
                "stage",
                "currency",
                "open_count",
                "value_minor",
                "median_stage_seconds",
                "average_stage_seconds",
            ),
            pipeline,
        ),
        Report(
            "speed-to-lead",
            "Speed to first contact",
            "For the records created in the range: how soon the first outbound call or message followed "
            "(median and 90th percentile seconds), and the share of all of them contacted within 5 minutes and "
            "within an hour; per lead source and per member who made the first contact.",
            (p.LEAD_SOURCE, p.MEMBER),
            SPEED_COLUMNS,
            speed_to_lead,
        ),
        Report(
            "appointments",
            "Appointments",
            "Appointments starting in the range: booked (all made), scheduled (not yet resolved), attended (arrived "
            "or completed), no-show and cancelled, with the no-show rate of those that came due; per period "
            "(practice time), practitioner and appointment type.",
            (p.PRACTITIONER, p.APPOINTMENT_TYPE, p.LOCATION, p.PERIOD),
            ("group", "key", "label", *OUTCOMES, "no_show_rate"),
            appointments,
        ),
        Report(
            "campaigns",
            "Campaigns and messaging",
            "Campaigns launched in the range, each with its recipients' outcomes (sent, delivered, read where the "
            "channel reports it, failed, replied, unsubscribed); and the messages of the range per channel "
            "(outbound by outcome, inbound).",
            (p.CHANNEL,),
            ("group", "key", "label", "channel", *CAMPAIGN_COUNTS, "outbound", "queued", "inbound"),
            campaigns,
        ),
        Report(
            "deposits",
            "Deposits",
            "Deposit requests made in the range, per currency: requested (sent to the patient), paid, expired, "
            "cancelled, refunded, outstanding, and the amounts requested, paid and refunded in minor units.",
            (),
            ("currency", *DEPOSIT_COUNTS, *DEPOSIT_AMOUNTS),
            deposits,
        ),
        Report(
            "reviews",
            "Reviews",
            "Reviews written in the range: how many, the average rating, the rating distribution and the share "
            "that has a reply.",
            (p.LOCATION,),
            ("rating", "count", "share"),
            reviews,
        ),
    )
}
