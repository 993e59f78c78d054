"""When a subscription is due, and the period it reports: reckoned in the practice's time zone.

daily: every day at send_time, reporting the day before; weekly: on `weekday` at send_time, the seven days before;
monthly: on `month_day` (1 to 28, so every month has it) at send_time, the calendar month before."""

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from apps.reports.models import Frequency


def _matches(frequency: str, day: date, *, weekday: int | None, month_day: int | None) -> bool:
    if frequency == Frequency.WEEKLY:
        return day.weekday() == weekday
    if frequency == Frequency.MONTHLY:
        return day.day == month_day
    return True


def next_due(*, frequency: str, send_time, weekday, month_day, tz: ZoneInfo, after: datetime) -> datetime:
    """The first sending moment strictly after `after` (an aware datetime)."""
    day = after.astimezone(tz).date()
    for _ in range(64):  # a month and a bit covers every frequency
        if _matches(frequency, day, weekday=weekday, month_day=month_day):
            moment = datetime.combine(day, send_time, tzinfo=tz)
            if moment > after:
                return moment.astimezone(ZoneInfo("UTC"))
        day += timedelta(days=1)
    raise ValueError("no sending moment found")  # unreachable with valid fields


def period_for(*, frequency: str, sent_on: date) -> tuple[date, date]:
    """The period (both days inclusive) a sending on `sent_on` (practice date) reports: the one just ended."""
    yesterday = sent_on - timedelta(days=1)
    if frequency == Frequency.WEEKLY:
        return sent_on - timedelta(days=7), yesterday
    if frequency == Frequency.MONTHLY:
        last = sent_on.replace(day=1) - timedelta(days=1)
        return last.replace(day=1), last
    return yesterday, yesterday
