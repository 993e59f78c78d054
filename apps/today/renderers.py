"""How the Today view reads on the wire: TodaySerializer's output (apps.today.api.serializers, the documented schema)
written from the selectors' value rows by the areas' row renderers, camelCased as the renderer writes it, without a
serializer per row. tests/today prove the bytes identical to the serializers'."""

from apps.appointments.public import appointment_row
from apps.core.wire import Camelized, datetime_string
from apps.journeys.public import journey_row
from apps.patients.public import patient_list_row
from apps.tasks.public import task_row
from apps.today.selectors import Today


def _journey(values: dict) -> Camelized:
    row = journey_row(values)
    row["needsActionReasons"] = values["needs_action_reasons"]
    return row


def today_body(day: Today) -> Camelized:
    tasks, appointments, leads, journeys = day.tasks, day.appointments, day.new_leads, day.journeys
    return Camelized(
        date=day.date.isoformat(),
        timezone=day.timezone,
        generatedAt=datetime_string(day.generated_at),
        tasks=Camelized(
            items=[task_row(row) for row in tasks.items], total=tasks.total, overdueTotal=tasks.overdue_total
        ),
        appointments=None
        if appointments is None
        else Camelized(items=[appointment_row(row) for row in appointments.items], total=appointments.total),
        newLeads=None
        if leads is None
        else Camelized(
            items=[patient_list_row(row) for row in leads.items],
            total=leads.total,
            since=datetime_string(leads.since),
        ),
        journeys=None
        if journeys is None
        else Camelized(
            items=[_journey(row) for row in journeys.items],
            total=journeys.total,
            staleAfterDays=journeys.stale_after_days,
        ),
    )
