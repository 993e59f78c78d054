"""Schedule ticks: daily or weekly at HH:MM of the practice's clock (its IANA timezone; UTC when unknown).

A wall-clock time that a daylight-saving change skips runs at the same time read with the earlier offset (zoneinfo's
fold=0), so a tick is never lost; a repeated hour runs once (the first).
"""

from datetime import UTC, datetime, time, timedelta

from apps.tasks.public import practice_timezone


def next_tick(schedule: dict, organization, after: datetime) -> datetime:
    """The first tick strictly after `after` (aware), in UTC."""
    zone = practice_timezone(organization)
    hour, minute = (int(part) for part in schedule["time"].split(":"))
    local = after.astimezone(zone)
    day = local.date()
    for offset in range(0, 8):
        candidate_day = day + timedelta(days=offset)
        if schedule["frequency"] == "weekly" and candidate_day.weekday() != schedule["weekday"]:
            continue
        candidate = datetime.combine(candidate_day, time(hour, minute), tzinfo=zone)
        if candidate > after:
            return candidate.astimezone(UTC)
    raise AssertionError("a daily or weekly schedule always has a tick within eight days")


def tick_fields(tick_at: datetime, organization) -> dict:
    local = tick_at.astimezone(practice_timezone(organization))
    return {"tick.weekday": local.weekday(), "tick.day": local.day}
