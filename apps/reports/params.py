"""A report's parameters: the date range (from/to, ISO dates in the practice's time zone, both inclusive) and the
report's own filters, checked and normalized. Every problem is a 400 VALIDATION_ERROR naming the parameter."""

import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from apps.accounts.models import Membership
from apps.appointments.public import AppointmentType
from apps.conversations.public import Kind
from apps.core.errors import ValidationFailed
from apps.journeys.public import pipelines_of
from apps.patients.public import names_of

DEFAULT_DAYS = 30  # without from/to: the 30 days ending today
MAX_DAYS = 366  # the longest range one report covers
RANGE_NAMES = ("from", "to")
FLAG_NAMES = ("refresh",)


@dataclass(frozen=True)
class Filter:
    name: str  # on the wire (camelCase)
    kind: str  # lead_source, location, practitioner, pipeline, member, or choice
    description: str
    choices: tuple[str, ...] = ()

    def schema(self) -> dict:
        shown = {"name": self.name, "type": "choice" if self.choices else "uuid", "description": self.description}
        return shown | ({"choices": list(self.choices)} if self.choices else {})


LEAD_SOURCE = Filter("leadSourceId", "lead_source", "Only records with this lead source.")
LOCATION = Filter("locationId", "location", "Only this location.")
PRACTITIONER = Filter("practitionerId", "practitioner", "Only this practitioner's appointments.")
PIPELINE = Filter("pipelineId", "pipeline", "The pipeline (default: the practice's default pipeline).")
MEMBER = Filter("memberId", "member", "A member of the practice (their user id).")
APPOINTMENT_TYPE = Filter("appointmentType", "choice", "Only this appointment type.", tuple(AppointmentType.values))
CHANNEL = Filter("channel", "choice", "Only this messaging channel.", tuple(Kind.values))
PERIOD = Filter("period", "choice", "Rows per day, week (the default) or month.", ("day", "week", "month"))


@dataclass(frozen=True)
class Range:
    date_from: date
    date_to: date
    tz: ZoneInfo

    @property
    def start(self) -> datetime:
        return datetime.combine(self.date_from, time.min, tzinfo=self.tz)

    @property
    def end(self) -> datetime:
        """Exclusive: midnight after `date_to`."""
        return datetime.combine(self.date_to + timedelta(days=1), time.min, tzinfo=self.tz)


@dataclass(frozen=True)
class Params:
    range: Range
    filters: dict = field(default_factory=dict)  # wire name → normalized string value

    def value(self, name: str):
        """A filter's value for the sources: a UUID for id filters, the string for choices, None when unset."""
        raw = self.filters.get(name)
        if raw is None or name in (APPOINTMENT_TYPE.name, CHANNEL.name, PERIOD.name):
            return raw
        return uuid.UUID(raw)

    def normalized(self) -> dict:
        """What identifies the answer (the cache key and an e-mail's parameters): dates and sorted filters."""
        return {
            "from": self.range.date_from.isoformat(),
            "to": self.range.date_to.isoformat(),
            **dict(sorted(self.filters.items())),
        }


def practice_zone(organization) -> ZoneInfo:
    try:
        return ZoneInfo(organization.timezone or "UTC")
    except (ValueError, KeyError):
        return ZoneInfo("UTC")


def practice_today(organization, now: datetime) -> date:
    return now.astimezone(practice_zone(organization)).date()


def _known_ids(organization, kind: str) -> set[str]:
    if kind == "pipeline":
        return {str(row["id"]) for row in pipelines_of(organization=organization)}
    if kind == "member":
        return {str(user_id) for user_id in Membership.objects.for_org(organization).values_list("user_id", flat=True)}
    return {str(key) for key in names_of(organization=organization, kind=kind)}


def parse_filters(*, organization, filters: tuple[Filter, ...], data: dict, problems: dict) -> dict:
    """The report's filters present in `data` (wire names), normalized; problems collected by wire name."""
    found = {}
    for spec in filters:
        raw = data.get(spec.name)
        if raw is None or raw == "":
            continue
        if not isinstance(raw, str):
            problems[spec.name] = ["must be a string"]
        elif spec.choices:
            if raw not in spec.choices:
                problems[spec.name] = [f"must be one of: {', '.join(spec.choices)}"]
            else:
                found[spec.name] = raw
        else:
            try:
                value = str(uuid.UUID(raw))
            except ValueError:
                problems[spec.name] = ["must be a UUID"]
                continue
            # Another practice's id is as unknown as one that never existed.
            if value not in _known_ids(organization, spec.kind):
                problems[spec.name] = ["no such record in this practice"]
            else:
                found[spec.name] = value
    return found


def _date(data: dict, name: str, problems: dict) -> date | None:
    raw = data.get(name)
    if raw is None or raw == "":
        return None
    try:
        return date.fromisoformat(raw)
    except (TypeError, ValueError):
        problems[name] = ["must be an ISO date (YYYY-MM-DD)"]
        return None


def parse_range(*, data: dict, today: date, tz: ZoneInfo, problems: dict) -> Range | None:
    """from/to (both optional: the 30 days ending today, or 30 days from `from`); reversed or longer than
    MAX_DAYS is a problem of the parameter named."""
    own: dict = {}
    date_from, date_to = _date(data, "from", own), _date(data, "to", own)
    if not own:
        if date_to is None:
            date_to = today if date_from is None else min(today, date_from + timedelta(days=DEFAULT_DAYS - 1))
            date_to = max(date_to, date_from or date_to)
        if date_from is None:
            date_from = date_to - timedelta(days=DEFAULT_DAYS - 1)
        if date_from > date_to:
            own["from"] = ["must be on or before `to`"]
        elif (date_to - date_from).days + 1 > MAX_DAYS:
            own["to"] = [f"the range may cover at most {MAX_DAYS} days"]
    problems.update(own)
    return None if own else Range(date_from, date_to, tz)


def raise_problems(problems: dict) -> None:
    if problems:
        first = next(iter(problems))
        raise ValidationFailed(f"{first}: {problems[first][0]}", details={"fields": problems})


def parse_query(*, organization, filters: tuple[Filter, ...], query: dict, now: datetime) -> tuple[Params, bool]:
    """A report route's query string → (Params, refresh). Unknown names are refused, naming them."""
    problems: dict = {}
    allowed = {*RANGE_NAMES, *FLAG_NAMES, *(spec.name for spec in filters)}
    for name in sorted(set(query) - allowed):
        problems[name] = ["is not a parameter of this report"]
    refresh = query.get("refresh", "false")
    if refresh not in ("true", "false"):
        problems["refresh"] = ["must be true or false"]
    found = parse_filters(organization=organization, filters=filters, data=query, problems=problems)
    tz = practice_zone(organization)
    date_range = parse_range(data=query, today=practice_today(organization, now), tz=tz, problems=problems)
    raise_problems(problems)
    return Params(range=date_range, filters=found), refresh == "true"
