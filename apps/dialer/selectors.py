"""Reads of the dialer: the connection a callback's routing token names (one prepared statement: every callback
starts here), the practice's connections, numbers, porting orders and parked events, the call log, and who a
number belongs to among the practice's patients."""

import re
from dataclasses import dataclass

import phonenumbers
from django.db.models import F, Prefetch, Q, QuerySet

from apps.core.statements import prepared_cursor
from apps.dialer.errors import DialerConnectionAmbiguous, DialerNotConnected
from apps.dialer.models import (
    LIVE_NUMBER_STATUSES,
    Call,
    ConnectionStatus,
    DialerConnection,
    EventState,
    PhoneNumber,
    PortingOrder,
    Recording,
    TelephonyEvent,
)
from apps.patients.public import Patient, digits_of

ROUTING_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")


@dataclass(frozen=True)
class CallbackConnection:
    id: object
    organization_id: object
    public_key: str


_CONNECTION_FOR_TOKEN = (
    "SELECT id, organization_id, public_key FROM dialer_dialerconnection WHERE routing_token = %s AND status = %s"
)


def connection_for_callback(token: str) -> CallbackConnection | None:
    """The active connection a callback URL's routing token names (raises DatabaseError when the database does not
    answer: the callers turn that into 503)."""
    if not ROUTING_TOKEN.fullmatch(token or ""):
        return None  # not a token we issue (and never a NUL byte in a query)
    with prepared_cursor() as cursor:
        cursor.execute(_CONNECTION_FOR_TOKEN, [token, ConnectionStatus.ACTIVE])
        row = cursor.fetchone()
    return CallbackConnection(*row) if row else None


def connections_of(*, organization) -> QuerySet:
    return DialerConnection.objects.for_org(organization).order_by("-created_at", "-id")


def connection_for_use(*, organization, connection: DialerConnection | None) -> DialerConnection:
    """The connection a request names (already resolved in the practice), else the practice's only active one."""
    if connection is not None:
        if connection.status != ConnectionStatus.ACTIVE:
            raise DialerNotConnected("This telephony connection is disconnected.")
        return connection
    active = list(
        DialerConnection.objects.for_org(organization).filter(status=ConnectionStatus.ACTIVE).order_by("created_at")[:2]
    )
    if not active:
        raise DialerNotConnected()
    if len(active) > 1:
        raise DialerConnectionAmbiguous()
    return active[0]


def numbers_of(*, organization, connection_id=None, status: str | None = None) -> QuerySet:
    numbers = PhoneNumber.objects.for_org(organization)
    if connection_id is not None:
        numbers = numbers.filter(connection_id=connection_id)
    if status:
        numbers = numbers.filter(status=status)
    return numbers.order_by("-created_at", "-id")


def default_number(*, organization) -> PhoneNumber | None:
    """The number a click-to-call uses when none is named: the practice's oldest active number of an active
    connection."""
    return (
        PhoneNumber.objects.for_org(organization)
        .filter(status="active", connection__status=ConnectionStatus.ACTIVE)
        .select_related("connection")
        .order_by("created_at", "id")
        .first()
    )


def live_number(*, organization, connection_id, phone_number: str) -> PhoneNumber | None:
    return (
        PhoneNumber.objects.for_org(organization)
        .filter(connection_id=connection_id, phone_number=phone_number, status__in=LIVE_NUMBER_STATUSES)
        .first()
    )


def porting_orders_of(*, organization) -> QuerySet:
    return PortingOrder.objects.for_org(organization).order_by("-created_at", "-id")


def parked_events_of(*, organization, connection_id=None) -> QuerySet:
    events = TelephonyEvent.objects.for_org(organization).filter(state=EventState.PARKED)
    if connection_id is not None:
        events = events.filter(connection_id=connection_id)
    return events.order_by("-created_at", "-id")


# --- the call log ---------------------------------------------------------------------------------------------------


def calls_of(
    *, organization, patient_id=None, direction: str | None = None, status: str | None = None, number_id=None
) -> QuerySet:
    """The practice's calls with their recordings (one more query for the page, whatever its size)."""
    calls = Call.objects.for_org(organization)
    if patient_id is not None:
        calls = calls.filter(patient_id=patient_id)
    if direction:
        calls = calls.filter(direction=direction)
    if status:
        calls = calls.filter(status=status)
    if number_id is not None:
        calls = calls.filter(number_id=number_id)
    recordings = Recording.objects.for_org(organization).order_by("-created_at", "-id")
    return calls.prefetch_related(Prefetch("recordings", queryset=recordings))


def call_recording(call: Call, *, kind: str | None = None) -> Recording | None:
    """The call's newest recording (of `kind`, when given): what GET /calls/{id}/recording serves."""
    recordings = Recording.objects.for_org(call.organization_id).filter(call_id=call.id)
    if kind:
        recordings = recordings.filter(kind=kind)
    return recordings.order_by("-created_at", "-id").first()


# --- numbers to patients ----------------------------------------------------------------------------------------------


def normalise_number(value) -> str:
    """E.164-looking numbers as + and digits ("+39 02 1234 5678" → "+390212345678"); a SIP address or anything
    else kept as sent (lower case, at most 32 characters)."""
    if not isinstance(value, str):
        return ""
    value = value.strip()
    if re.fullmatch(r"\+?[\d\s().-]{4,40}", value):
        digits = re.sub(r"\D", "", value)
        return f"+{digits}"[:20] if digits else ""
    return value.lower()[:32]


def number_spellings(number: str) -> set[str]:
    """The digit strings a patient's stored number may have for this international number: +39 333 1234567 is
    393331234567, 00393331234567 and 3331234567; +44 7700 900123 also 07700900123 (the national trunk prefix)."""
    digits = re.sub(r"\D", "", number)
    spellings = {digits, f"00{digits}"}
    try:
        parsed = phonenumbers.parse(f"+{digits}")
    except phonenumbers.NumberParseException:
        parsed = None
    if parsed is not None:
        spellings.add(phonenumbers.national_significant_number(parsed))
        spellings.add(re.sub(r"\D", "", phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.NATIONAL)))
    return {spelling for spelling in spellings if len(spelling) >= 6}


def patient_for_number(*, organization, number: str) -> Patient | None:
    """The practice's unmerged patient with this number as mobile or other phone (as the stored digits may spell
    it): active patients before archived ones, then the most recently updated."""
    if not number.startswith("+"):
        return None
    spellings = number_spellings(number)
    if not spellings:
        return None
    return (
        Patient.objects.for_org(organization)
        .filter(merged_into__isnull=True)
        .annotate(mobile_digits=digits_of("phone_mobile"), other_digits=digits_of("phone_other"))
        .filter(Q(mobile_digits__in=spellings) | Q(other_digits__in=spellings))
        .order_by(F("archived_at").asc(nulls_first=True), "-updated_at", "id")
        .first()
    )
