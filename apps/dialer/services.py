"""Writes of the dialer. Requests to the provider are made with no transaction open (a slow provider holds no
database connection or row lock); what they answer is then written in one transaction.

Events: the catalogue has no call events, so calls emit none of their own; a missed call's or a voicemail's
follow-up task emits task.created (apps.tasks), and every finished call writes a `call` entry (ids, direction,
status, duration; never numbers) on its patient's timeline."""

import logging
import secrets
import uuid
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core import crypto
from apps.core.errors import ValidationFailed
from apps.core.writes import assign_fields
from apps.dialer import provider
from apps.dialer.errors import (
    DialerNoNumber,
    DialerNotConfigured,
    DialerNotConnected,
    NumberAlreadyConnected,
    NumberNotReleasable,
    ParkedEventDecided,
    ParkedEventStillUnrouted,
    ProviderRefusedRequest,
    ProviderUnavailableError,
)
from apps.dialer.models import (
    LIVE_NUMBER_STATUSES,
    Call,
    CallStatus,
    ConnectionStatus,
    DialerConnection,
    Direction,
    EventState,
    NumberSource,
    NumberStatus,
    PhoneNumber,
    PortingOrder,
    Recording,
    RecordingKind,
    TelephonyEvent,
)
from apps.dialer.selectors import (
    default_number,
    live_number,
    normalise_number,
    patient_for_number,
)
from apps.patients.public import Activity, PatientMerged, timeline_record
from apps.tasks.public import task_create
from apps.today.public import push_to_users

logger = logging.getLogger("apps.dialer")

CONNECTION_FIELDS = ("name", "public_key", "call_control_app_id", "record_calls", "missed_call_assignee")
CONNECTION_RELATIONS = {"missed_call_assignee": "missed_call_assignee"}
VOICEMAIL_STATE = "voicemail"  # the client_state (base64) a practice's voicemail flow records with


def new_routing_token() -> str:
    return secrets.token_urlsafe(24)


# --- connections -----------------------------------------------------------------------------------------------------


def connection_api_key(connection: DialerConnection) -> str:
    try:
        return crypto.decrypt(connection.api_key_encrypted)
    except ValueError:
        logger.error("dialer connection %s: the API key cannot be decrypted", connection.id)
        raise DialerNotConfigured("The connection's API key cannot be read; set apiKey again.") from None


@transaction.atomic
def connection_create(*, organization, actor, data: dict) -> DialerConnection:
    connection = DialerConnection(
        organization=organization,
        routing_token=new_routing_token(),
        api_key_encrypted=crypto.encrypt(data["api_key"]),
        created_by=actor,
    )
    assign_fields(connection, data, fields=CONNECTION_FIELDS, relations=CONNECTION_RELATIONS)
    connection.save(force_insert=True)
    return connection


@transaction.atomic
def connection_update(*, organization, actor, connection: DialerConnection, data: dict) -> DialerConnection:
    """Any subset of the settings; apiKey replaces the stored key (never shown); rotateToken issues a new routing
    token (the old webhook URL answers 404 at once: give the provider the new one)."""
    connection = DialerConnection.objects.for_org(organization).select_for_update().get(id=connection.id)
    changed = assign_fields(connection, data, fields=CONNECTION_FIELDS, relations=CONNECTION_RELATIONS)
    if data.get("api_key"):
        connection.api_key_encrypted = crypto.encrypt(data["api_key"])
        changed.append("apiKey")
    if data.get("rotate_token"):
        connection.routing_token = new_routing_token()
        changed.append("routingToken")
    if changed:
        connection.save()
    return connection


@transaction.atomic
def connection_disconnect(*, organization, actor, connection: DialerConnection) -> None:
    """Callbacks to its URL answer 404 from now on; its numbers, calls and recordings stay."""
    DialerConnection.objects.for_org(organization).filter(id=connection.id, status=ConnectionStatus.ACTIVE).update(
        status=ConnectionStatus.DISCONNECTED, disconnected_at=timezone.now(), updated_at=timezone.now()
    )


def _transport(connection: DialerConnection):
    return provider.transport(connection_api_key(connection))


def _provider_call(operation, *args, **kwargs):
    try:
        return operation(*args, **kwargs)
    except provider.ProviderUnavailable:
        raise ProviderUnavailableError() from None
    except provider.ProviderRefused as refusal:
        raise ProviderRefusedRequest(refusal.code) from None


# --- numbers ---------------------------------------------------------------------------------------------------------


def numbers_search(*, organization, connection: DialerConnection, query: provider.SearchQuery) -> list:
    return _provider_call(_transport(connection).search_numbers, query)


def number_order(*, organization, actor, connection: DialerConnection, phone_number: str) -> PhoneNumber:
    """Order the number on the connection's account and attach it to its Call Control application. An order the
    provider completes at once gives an active number; a pending one becomes active with number_order.complete."""
    if (
        PhoneNumber.objects.for_org(organization)
        .filter(phone_number=phone_number, status__in=LIVE_NUMBER_STATUSES)
        .exists()
    ):
        raise NumberAlreadyConnected()
    ordered = _provider_call(
        _transport(connection).order_number,
        phone_number=phone_number,
        app_id=connection.call_control_app_id,
        reference=str(organization.id),
    )
    if ordered.status == "failure":
        raise ProviderRefusedRequest("number_order_failed")
    status = NumberStatus.ACTIVE if ordered.status == "success" else NumberStatus.PENDING
    number = PhoneNumber(
        organization=organization,
        connection=connection,
        phone_number=phone_number,
        status=status,
        source=NumberSource.ORDERED,
        provider_number_id=ordered.number_id,
        provider_order_id=ordered.order_id,
    )
    try:
        with transaction.atomic():
            number.save(force_insert=True)
    except IntegrityError:  # ordered twice at once: the provider keeps one order per number
        raise NumberAlreadyConnected() from None
    return number


def number_release(*, organization, actor, number: PhoneNumber) -> PhoneNumber:
    """Release the number from the account (never rate limited). Its calls keep their log."""
    if number.status not in LIVE_NUMBER_STATUSES:
        raise NumberNotReleasable(details={"status": number.status})
    _provider_call(_transport(number.connection).release_number, phone_number=number.phone_number)
    now = timezone.now()
    PhoneNumber.objects.for_org(organization).filter(id=number.id, status__in=LIVE_NUMBER_STATUSES).update(
        status=NumberStatus.RELEASED, released_at=now, updated_at=now
    )
    number.refresh_from_db()
    return number


# --- porting ---------------------------------------------------------------------------------------------------------


def porting_order_create(*, organization, actor, connection: DialerConnection, phone_numbers: list[str]) -> list:
    """A porting order on the provider (which may split it by losing carrier): one row per order it answers,
    in its status (draft until the practice completes it with the provider); porting events move it on."""
    if (
        PhoneNumber.objects.for_org(organization)
        .filter(phone_number__in=phone_numbers, status__in=LIVE_NUMBER_STATUSES)
        .exists()
    ):
        raise NumberAlreadyConnected()
    created = _provider_call(_transport(connection).create_porting_order, phone_numbers=phone_numbers)
    with transaction.atomic():
        return [
            PortingOrder.objects.create(
                organization=organization,
                connection=connection,
                provider_order_id=order.order_id,
                phone_numbers=order.phone_numbers,
                status=order.status,
                created_by=actor,
            )
            for order in created
        ]


# --- click-to-call ---------------------------------------------------------------------------------------------------


def call_place(*, organization, actor, number: PhoneNumber | None, to_number: str, patient) -> Call:
    """Place an outbound call from one of the practice's numbers through the provider, and log it. The call row is
    written first (its id travels as the call's client_state, so the provider's events find it at once); a
    provider failure leaves it failed in the log and answers 503 or 409."""
    number = number or default_number(organization=organization)
    if number is None or number.status != NumberStatus.ACTIVE:
        raise DialerNoNumber()
    connection = number.connection
    if connection.status != ConnectionStatus.ACTIVE:
        raise DialerNotConnected("The number's telephony connection is disconnected.")
    transport = _transport(connection)
    if not connection.call_control_app_id and not transport.sandbox:
        raise DialerNotConfigured()
    if patient is None:
        patient = patient_for_number(organization=organization, number=to_number)
    call = Call.objects.create(
        organization=organization,
        connection=connection,
        number=number,
        patient=patient,
        user=actor,
        direction=Direction.OUTBOUND,
        status=CallStatus.INITIATED,
        from_number=number.phone_number,
        to_number=to_number,
        started_at=timezone.now(),
    )
    try:
        placed = transport.create_call(
            app_id=connection.call_control_app_id,
            to=to_number,
            from_=number.phone_number,
            client_state=provider.client_state_for(call.id),
            record=connection.record_calls,
        )
    except provider.ProviderUnavailable:
        _call_failed(call, "provider_unavailable")
        raise ProviderUnavailableError() from None
    except provider.ProviderRefused as refusal:
        _call_failed(call, refusal.code)
        raise ProviderRefusedRequest(refusal.code) from None
    Call.objects.for_org(organization).filter(id=call.id, provider_call_leg_id="").update(
        provider_call_leg_id=placed.call_leg_id,
        provider_call_session_id=placed.call_session_id,
        provider_call_control_id=placed.call_control_id,
        updated_at=timezone.now(),
    )
    call.refresh_from_db()
    return call


def _call_failed(call: Call, cause: str) -> None:
    now = timezone.now()
    Call.objects.for_org(call.organization_id).filter(id=call.id, status=CallStatus.INITIATED).update(
        status=CallStatus.FAILED, ended_at=now, hangup_cause=cause[:64], duration_seconds=0, updated_at=now
    )


# --- applying the provider's events (apps.dialer.inbound runs these in Celery) ---------------------------------------


class NotYetApplicable(Exception):
    """The event names something not known yet (a recording before its call): retried by the sweep."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class EventIgnored(Exception):
    """Nothing to do for this event (a type we do not use, a replay, something no longer here): done with."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _payload(event: TelephonyEvent) -> dict:
    data = event.payload.get("data") if isinstance(event.payload, dict) else None
    payload = data.get("payload") if isinstance(data, dict) else None
    return payload if isinstance(payload, dict) else {}


def _text(value, limit: int = 128) -> str:
    return str(value)[:limit] if isinstance(value, str | int) and not isinstance(value, bool) else ""


def _time(value) -> datetime | None:
    from apps.dialer.inbound import parse_time

    return parse_time(value)


def event_apply(event: TelephonyEvent) -> None:
    """Apply one stored event. Raises NotYetApplicable or EventIgnored (apps.dialer.inbound handles both)."""
    kind, payload = event.event_type, _payload(event)
    if kind in CALL_PROGRESS:
        return CALL_PROGRESS[kind](event, payload)
    if kind in ("call.machine.detection.ended", "call.machine.premium.detection.ended"):
        return _machine_detected(event, payload)
    if kind == "call.recording.saved":
        return _recording_saved(event, payload)
    if kind.startswith("porting_order."):
        return _porting_event(event, payload)
    if kind.startswith("portout."):
        return _portout_event(event, payload)
    if kind == "number_order.complete":
        return _number_order_complete(event, payload)
    raise EventIgnored("unhandled_event_type")


def _direction(value, *, to: str, connection: DialerConnection) -> str | None:
    value = str(value or "").lower()
    if value in ("incoming", "inbound"):
        return Direction.INBOUND
    if value in ("outgoing", "outbound"):
        return Direction.OUTBOUND
    if live_number(organization=connection.organization_id, connection_id=connection.id, phone_number=to):
        return Direction.INBOUND
    return Direction.OUTBOUND


def _call_of(event: TelephonyEvent, payload: dict, *, create: bool) -> Call | None:
    """The call an event is about, locked: by our id in client_state (a click-to-call), else by the provider's
    call leg id; made from the event when `create` and unknown."""
    organization, connection = event.organization, event.connection
    calls = Call.objects.for_org(organization).select_for_update().filter(connection_id=connection.id)
    leg = _text(payload.get("call_leg_id"))
    state = provider.client_state_value(payload.get("client_state"))
    call = None
    if state.startswith("call:"):
        try:
            call = calls.filter(id=uuid.UUID(state[5:])).first()
        except ValueError:
            call = None
    if call is None and leg:
        call = calls.filter(provider_call_leg_id=leg).first()
    if call is not None:
        if leg and not call.provider_call_leg_id:
            call.provider_call_leg_id = leg
            call.provider_call_session_id = _text(payload.get("call_session_id"))
            call.provider_call_control_id = _text(payload.get("call_control_id"), 256)
            call.save(
                update_fields=[
                    "provider_call_leg_id", "provider_call_session_id", "provider_call_control_id", "updated_at"
                ]
            )  # fmt: skip
        return call
    if not create:
        return None
    to, from_ = normalise_number(payload.get("to")), normalise_number(payload.get("from"))
    if not to or not from_:
        raise EventIgnored("call_without_numbers")
    direction = _direction(payload.get("direction"), to=to, connection=connection)
    practice_number, other = (to, from_) if direction == Direction.INBOUND else (from_, to)
    call = Call(
        organization=organization,
        connection=connection,
        number=live_number(organization=organization, connection_id=connection.id, phone_number=practice_number),
        patient=patient_for_number(organization=organization, number=other),
        direction=direction,
        from_number=from_,
        to_number=to,
        provider_call_leg_id=leg,
        provider_call_session_id=_text(payload.get("call_session_id")),
        provider_call_control_id=_text(payload.get("call_control_id"), 256),
        started_at=_time(payload.get("start_time")) or event.occurred_at or timezone.now(),
    )
    try:
        with transaction.atomic():
            call.save(force_insert=True)
    except IntegrityError:  # another worker made it from another event of the same leg: use theirs next time
        raise NotYetApplicable("call_created_concurrently") from None
    return call


def _call_initiated(event: TelephonyEvent, payload: dict) -> None:
    _call_of(event, payload, create=True)


def _call_answered(event: TelephonyEvent, payload: dict) -> None:
    call = _call_of(event, payload, create=True)
    if call.answered_at is None:
        call.answered_at = event.occurred_at or timezone.now()
    if call.status == CallStatus.INITIATED:
        call.status = CallStatus.ANSWERED
    elif call.status in (CallStatus.MISSED, CallStatus.NO_ANSWER):
        call.status = CallStatus.COMPLETED  # the answer's event came after the hang-up's
    call.save(update_fields=["answered_at", "status", "updated_at"])


def _call_hangup(event: TelephonyEvent, payload: dict) -> None:
    call = _call_of(event, payload, create=True)
    if call.ended_at is not None:
        raise EventIgnored("call_already_ended")
    call.ended_at = _time(payload.get("end_time")) or event.occurred_at or timezone.now()
    call.hangup_cause = _text(payload.get("hangup_cause"), 64)
    if call.answered_at is not None:
        call.duration_seconds = max(0, int((call.ended_at - call.answered_at).total_seconds()))
    else:
        call.duration_seconds = 0
    if call.status != CallStatus.VOICEMAIL:
        if call.answered_at is not None:
            call.status = CallStatus.COMPLETED
        else:
            call.status = CallStatus.MISSED if call.direction == Direction.INBOUND else CallStatus.NO_ANSWER
    call.save(update_fields=["ended_at", "hangup_cause", "duration_seconds", "status", "updated_at"])
    if call.status != CallStatus.VOICEMAIL:  # a voicemail wrote its own entry
        _timeline(event, call)
    if call.status == CallStatus.MISSED:
        _follow_up(event, call)


CALL_PROGRESS = {"call.initiated": _call_initiated, "call.answered": _call_answered, "call.hangup": _call_hangup}


def _machine_detected(event: TelephonyEvent, payload: dict) -> None:
    call = _call_of(event, payload, create=False)
    if call is None:
        raise NotYetApplicable("call_unknown")
    result = _text(payload.get("result"), 32).lower()
    call.answered_by = "machine" if result in ("machine", "beep_detected", "fax_detected") else "human"
    call.save(update_fields=["answered_by", "updated_at"])


def _recording_saved(event: TelephonyEvent, payload: dict) -> None:
    """A recording (or a voicemail: client_state "voicemail") to copy into the practice's storage after the commit.
    A voicemail turns an inbound call into a voicemail with its follow-up task."""
    call = _call_of(event, payload, create=False)
    if call is None:
        raise NotYetApplicable("call_unknown")
    recording_id = _text(payload.get("recording_id"))
    links = payload.get("recording_urls") or payload.get("public_recording_urls") or {}
    links = links if isinstance(links, dict) else {}
    url = next((links[k] for k in ("mp3", "wav") if isinstance(links.get(k), str) and links[k]), "")
    if not url and not recording_id:
        raise EventIgnored("recording_without_link")
    if (
        recording_id
        and Recording.objects.for_org(call.organization_id)
        .filter(call_id=call.id, provider_recording_id=recording_id)
        .exists()
    ):
        raise EventIgnored("recording_already_known")
    voicemail = provider.client_state_value(payload.get("client_state")) == VOICEMAIL_STATE
    started, ended = _time(payload.get("recording_started_at")), _time(payload.get("recording_ended_at"))
    recording = Recording.objects.create(
        organization=event.organization,
        call=call,
        kind=RecordingKind.VOICEMAIL if voicemail else RecordingKind.CALL,
        provider_recording_id=recording_id,
        provider_url=url[:4000],
        duration_seconds=max(0, int((ended - started).total_seconds())) if started and ended else None,
    )
    if voicemail and call.direction == Direction.INBOUND and call.status != CallStatus.VOICEMAIL:
        call.status = CallStatus.VOICEMAIL
        call.save(update_fields=["status", "updated_at"])
        _timeline(event, call, recording_id=str(recording.id))
        _follow_up(event, call)
    from apps.dialer import recordings

    transaction.on_commit(lambda: recordings.request_fetch(recording.id))


def _timeline(event: TelephonyEvent, call: Call, **extra) -> None:
    if call.patient_id is None:
        return
    data = {
        "callId": str(call.id),
        "direction": call.direction,
        "status": call.status,
        "durationSeconds": call.duration_seconds,
        **extra,
    }
    timeline_record(
        organization=event.organization, user=None, patient_id=call.patient_id, kind=Activity.Kind.CALL, data=data
    )


def _caller(call: Call) -> str:
    patient = call.patient
    if patient is not None:
        name = f"{patient.first_name or ''} {patient.last_name or ''}".strip()
        if name:
            return name
    return call.from_number


def _follow_up(event: TelephonyEvent, call: Call) -> None:
    """One follow-up call task a call (missed, or a voicemail), due now, for the connection's missed-call assignee
    (unassigned when none, or when they left the practice): it is on their Today."""
    if call.follow_up_task_id is not None:
        return
    what = "voicemail" if call.status == CallStatus.VOICEMAIL else "missed call"
    data = {
        "title": f"Call back {_caller(call)} ({what})"[:200],
        "description": f"{what.capitalize()} from {call.from_number} to {call.to_number}.",
        "due_at": timezone.now(),
        "priority": "high",
        "assignee_id": event.connection.missed_call_assignee_id,
        "patient": call.patient,
    }
    task = None
    for fallback in ({}, {"assignee_id": None}, {"assignee_id": None, "patient": None}):
        try:
            with transaction.atomic():
                task = task_create(organization=event.organization, user=None, data={**data, **fallback})
            break
        except (ValidationFailed, PatientMerged):  # the assignee left, or the patient was merged meanwhile
            continue
    if task is None:
        raise EventIgnored("follow_up_task_refused")
    call.follow_up_task_id = task.id
    call.save(update_fields=["follow_up_task_id", "updated_at"])
    if task.assignee_id:
        push_to_users(
            event.organization_id,
            [task.assignee_id],
            "dialer.follow_up",
            {"callId": str(call.id), "taskId": str(task.id), "status": call.status},
        )


def _porting_event(event: TelephonyEvent, payload: dict) -> None:
    order = (
        PortingOrder.objects.for_org(event.organization_id)
        .select_for_update()
        .filter(connection_id=event.connection_id, provider_order_id=_text(payload.get("id"), 64))
        .first()
    )
    if order is None:
        raise EventIgnored("porting_order_unknown")
    occurred = event.occurred_at or timezone.now()
    if order.last_event_at is not None and occurred < order.last_event_at:
        raise EventIgnored("older_than_applied")
    order.last_event_type, order.last_event_at = event.event_type, occurred
    if event.event_type == "porting_order.status_changed":
        status = payload.get("status")
        status = status.get("value") if isinstance(status, dict) else status
        if _text(status, 32):
            order.status = _text(status, 32)
    elif event.event_type == "porting_order.deleted":
        order.status = "cancelled"
    order.save()
    if order.status == "ported":
        _ported_in(order)


def _ported_in(order: PortingOrder) -> None:
    """The order's numbers are the practice's now (active on its connection), unless already live here."""
    live = set(
        PhoneNumber.objects.for_org(order.organization_id)
        .filter(phone_number__in=order.phone_numbers, status__in=LIVE_NUMBER_STATUSES)
        .values_list("phone_number", flat=True)
    )
    PhoneNumber.objects.bulk_create(
        [
            PhoneNumber(
                organization_id=order.organization_id,
                connection_id=order.connection_id,
                phone_number=number,
                status=NumberStatus.ACTIVE,
                source=NumberSource.PORTED,
                porting_order=order,
            )
            for number in dict.fromkeys(order.phone_numbers)
            if number not in live
        ]
    )


def _portout_event(event: TelephonyEvent, payload: dict) -> None:
    if event.event_type != "portout.status_changed":
        raise EventIgnored("portout_event_without_status")
    numbers = [normalise_number(n) for n in payload.get("phone_numbers") or [] if isinstance(n, str)]
    status = _text(payload.get("status"), 32)
    if not status:
        raise EventIgnored("portout_without_status")
    now = timezone.now()
    rows = PhoneNumber.objects.for_org(event.organization_id).filter(
        connection_id=event.connection_id, phone_number__in=numbers, status__in=LIVE_NUMBER_STATUSES
    )
    if status == "ported":
        rows.update(portout_status=status, status=NumberStatus.PORTED_OUT, released_at=now, updated_at=now)
    else:
        rows.update(portout_status=status, updated_at=now)


def _number_order_complete(event: TelephonyEvent, payload: dict) -> None:
    order_id = _text(payload.get("id"), 64)
    now = timezone.now()
    for item in payload.get("phone_numbers") or []:
        if not isinstance(item, dict):
            continue
        status = {"success": NumberStatus.ACTIVE, "failure": NumberStatus.FAILED}.get(_text(item.get("status"), 16))
        if status is None:
            continue
        PhoneNumber.objects.for_org(event.organization_id).filter(
            connection_id=event.connection_id,
            provider_order_id=order_id,
            phone_number=normalise_number(item.get("phone_number")),
            status=NumberStatus.PENDING,
        ).update(status=status, updated_at=now)


# --- parked events ---------------------------------------------------------------------------------------------------


def _decidable(organization, event: TelephonyEvent) -> TelephonyEvent:
    locked = TelephonyEvent.objects.for_org(organization).select_for_update().get(id=event.id)
    if locked.state != EventState.PARKED:
        raise ParkedEventDecided(details={"state": locked.state})
    return locked


@transaction.atomic
def parked_replay(*, organization, actor, event: TelephonyEvent) -> TelephonyEvent:
    """Apply a parked event after its number (or porting order) was connected here: it waits for a worker again.
    Still unrouted: 409, nothing changes."""
    from apps.dialer.inbound import routing_of

    event = _decidable(organization, event)
    check, keys = routing_of(event.event_type, _payload(event))
    if check == "number":
        routed = PhoneNumber.objects.for_org(organization).filter(
            connection_id=event.connection_id, phone_number__in=keys, status__in=LIVE_NUMBER_STATUSES
        )
    elif check == "porting":
        routed = PortingOrder.objects.for_org(organization).filter(
            connection_id=event.connection_id, provider_order_id__in=keys
        )
    else:
        routed = None
    if routed is not None and not routed.exists():
        raise ParkedEventStillUnrouted()
    event.state = EventState.RECEIVED
    event.save(update_fields=["state", "updated_at"])
    from apps.dialer.inbound import request_processing

    transaction.on_commit(lambda: request_processing(event.organization_id, event.connection_id))
    return event


@transaction.atomic
def parked_dismiss(*, organization, actor, event: TelephonyEvent) -> TelephonyEvent:
    event = _decidable(organization, event)
    event.state, event.payload = EventState.DISMISSED, {}
    event.save(update_fields=["state", "payload", "updated_at"])
    return event
