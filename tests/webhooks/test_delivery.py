"""The outbound-webhook delivery engine against a real local receiver (pytest-httpserver on 127.0.0.1).

Spec: "Webhook endpoint and delivery" (states) and "Outbound webhook events" (envelope, headers, signed bytes,
delivery rules 1-6). Delivery is driven synchronously: delivery.fan_out() turns committed events into deliveries,
delivery.drain_endpoint() sends an endpoint's due work. Time moves with time_machine (tick=False, then move/shift):
claims compare with timezone.now(), so a frozen clock makes every schedule step exact.
"""

import email.utils
import hashlib
import hmac
import json
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from werkzeug import Response

from apps.events import services as event_services
from apps.events.models import Event
from apps.events.services import Actor, emit
from apps.webhooks import delivery, sender, services
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint
from tests.helpers import run_in_threads

HOOK = "/hook"
MIN = timedelta(minutes=1)
HOUR = timedelta(hours=1)


# --- helpers ------------------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _driven_by_the_test(monkeypatch):
    """Nothing is published to Celery behind the test's back: committed events do not trigger a fan-out task and
    tests/replays do not schedule a drain (both only matter in transaction=True tests, where on_commit fires)."""
    monkeypatch.setattr(event_services, "_committed_listeners", [])
    monkeypatch.setattr(services, "schedule_drain", lambda endpoint_id: None)


@pytest.fixture
def clock(time_machine):
    """A frozen clock at a whole second (HTTP dates carry whole seconds)."""
    time_machine.move_to(timezone.now().replace(microsecond=0), tick=False)
    return time_machine


@dataclass
class Received:
    method: str
    path: str
    headers: dict
    body: bytes

    @property
    def delivery_id(self) -> str:
        return self.headers["X-Service-Delivery-Id"]

    @property
    def envelope(self) -> dict:
        return json.loads(self.body)


def listen(receiver, reply=200, path=HOOK) -> list[Received]:
    """Record every request to `path` in arrival order. `reply` is a status, or a callable(request, n) -> Response
    where n counts the requests so far (1-based)."""
    got: list[Received] = []
    lock = threading.Lock()

    def handler(request):
        with lock:
            got.append(Received(request.method, request.path, dict(request.headers), request.get_data()))
            n = len(got)
        if callable(reply):
            return reply(request, n)
        return Response("" if reply == 204 else "ok", status=reply)

    receiver.expect_request(path).respond_with_handler(handler)
    return got


def verifies(secret: str, received: Received) -> list[bool]:
    """An independent receiver-side verifier: HMAC-SHA256 over "timestamp.deliveryId." + the raw body bytes,
    compared in constant time with each comma-separated v1= value. One bool per value."""
    message = f"{received.headers['X-Service-Timestamp']}.{received.delivery_id}.".encode() + received.body
    expected = "v1=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    return [hmac.compare_digest(expected, part) for part in received.headers["X-Service-Signature"].split(",")]


def make_endpoint(organization, url, events=("patient.created",), *, enabled=True, name="Hook", **fields):
    """An endpoint as the settings routes would leave it once verified (and enabled)."""
    created = services.endpoint_create(organization=organization, user=None, name=name, url=url, events=list(events))
    WebhookEndpoint.objects.for_org(organization).filter(id=created.endpoint.id).update(
        verified_at=timezone.now(), enabled=enabled, **fields
    )
    return WebhookEndpoint.objects.for_org(organization).get(id=created.endpoint.id), created.signing_secret


def record(organization, type="patient.created", **fields) -> Event:
    with transaction.atomic():
        return emit(
            organization=organization,
            type=type,
            subject_type="patient",
            subject_id=fields.pop("subject_id", uuid.uuid4()),
            actor=fields.pop("actor", Actor.system()),
            **fields,
        )


def drain(endpoint, **kwargs) -> delivery.DrainResult:
    return delivery.drain_endpoint(endpoint.id, **kwargs)


def deliveries_of(endpoint) -> list[WebhookDelivery]:
    return list(
        WebhookDelivery.objects.for_org(endpoint.organization_id)
        .filter(endpoint_id=endpoint.id)
        .order_by("created_at", "id")
    )


def only_delivery(endpoint) -> WebhookDelivery:
    [one] = deliveries_of(endpoint)
    return one


def fresh(endpoint) -> WebhookEndpoint:
    return WebhookEndpoint.objects.for_org(endpoint.organization_id).get(id=endpoint.id)


def update_delivery(d: WebhookDelivery, **fields) -> None:
    WebhookDelivery.objects.for_org(d.organization_id).filter(id=d.id).update(**fields)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def one_queued(owner, receiver, reply=200, **endpoint_fields):
    """An enabled endpoint on the receiver with one fanned-out event queued for it."""
    endpoint, secret = make_endpoint(owner.organization, receiver.url_for(HOOK), **endpoint_fields)
    got = listen(receiver, reply)
    event = record(owner.organization)
    delivery.fan_out()
    return endpoint, secret, got, event


# --- request format ---------------------------------------------------------------------------------------------


def test_a_delivery_is_a_signed_post_of_the_version_1_envelope(owner, receiver):
    endpoint, secret, got, event = one_queued(owner, receiver)
    queued = only_delivery(endpoint)

    result = drain(endpoint)

    assert result.sent == 1
    [request] = got
    assert request.method == "POST"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["User-Agent"] == settings.SVC_WEBHOOK_USER_AGENT
    assert request.delivery_id == str(queued.id)
    assert re.fullmatch(r"\d+", request.headers["X-Service-Timestamp"])
    assert abs(int(request.headers["X-Service-Timestamp"]) - time.time()) <= 10
    assert re.fullmatch(r"v1=[0-9a-f]{64}", request.headers["X-Service-Signature"])
    assert verifies(secret, request) == [True]
    assert verifies("whsec_someone-else", request) == [False]
    # The verifier really covers the bytes: one changed byte, or another delivery id, fails.
    assert verifies(secret, Received("POST", HOOK, request.headers, request.body + b" ")) == [False]
    other_id = {**request.headers, "X-Service-Delivery-Id": str(uuid.uuid4())}
    assert verifies(secret, Received("POST", HOOK, other_id, request.body)) == [False]
    assert request.body == queued.body.encode()

    body = request.envelope
    assert set(body) == {"version", "id", "type", "createdAt", "organizationId", "subject", "actor", "data"}
    assert body["version"] == "1"
    assert body["id"] == str(event.id)
    assert body["type"] == "patient.created"
    assert body["organizationId"] == str(owner.organization.id)
    assert body["subject"] == {"type": "patient", "id": event.subject_id}
    assert body["actor"] == {"type": "system", "id": "service"}
    assert isinstance(body["data"], dict)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", body["createdAt"])
    assert datetime.fromisoformat(body["createdAt"].replace("Z", "+00:00")) == event.created_at

    done = only_delivery(endpoint)
    assert done.status == WebhookDelivery.Status.DELIVERED
    assert (done.attempts, done.publications, done.response_status) == (1, 1, 200)
    assert done.logical_id == event.id
    assert done.completed_at is not None


def test_every_attempt_is_signed_afresh_with_the_same_delivery_id(owner, receiver, clock):
    replies = iter([500, 200])
    endpoint, secret, got, _event = one_queued(owner, receiver, lambda request, n: Response("", next(replies)))

    drain(endpoint)
    clock.shift(5 * MIN)
    drain(endpoint)

    first, second = got
    assert first.delivery_id == second.delivery_id == str(only_delivery(endpoint).id)
    assert int(second.headers["X-Service-Timestamp"]) - int(first.headers["X-Service-Timestamp"]) == 300
    assert first.headers["X-Service-Signature"] != second.headers["X-Service-Signature"]
    assert first.body == second.body
    assert verifies(secret, first) == verifies(secret, second) == [True]


# --- rotation overlap -------------------------------------------------------------------------------------------


def _deliver_one(owner, endpoint):
    record(owner.organization)
    delivery.fan_out()
    drain(endpoint)


def test_after_rotation_deliveries_carry_both_signatures_for_24_hours(owner, receiver, clock):
    endpoint, old_secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)

    _endpoint, new_secret = services.secret_rotate(organization=owner.organization, endpoint=endpoint)
    _deliver_one(owner, endpoint)

    parts = got[0].headers["X-Service-Signature"].split(",")
    assert len(parts) == 2
    assert all(re.fullmatch(r"v1=[0-9a-f]{64}", part) for part in parts)
    with_new, with_old = verifies(new_secret, got[0]), verifies(old_secret, got[0])
    assert sorted(with_new) == sorted(with_old) == [False, True]
    assert with_new != with_old  # one value per secret

    clock.shift(24 * HOUR - timedelta(seconds=1))
    _deliver_one(owner, endpoint)
    assert len(got[1].headers["X-Service-Signature"].split(",")) == 2

    clock.shift(timedelta(seconds=2))
    _deliver_one(owner, endpoint)
    assert verifies(new_secret, got[2]) == [True]
    assert verifies(old_secret, got[2]) == [False]


def test_revoking_the_previous_secret_ends_the_overlap_at_once(owner, receiver):
    endpoint, old_secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    endpoint, new_secret = services.secret_rotate(organization=owner.organization, endpoint=endpoint)

    services.secret_revoke_previous(organization=owner.organization, endpoint=endpoint)
    _deliver_one(owner, endpoint)

    assert verifies(new_secret, got[0]) == [True]
    assert verifies(old_secret, got[0]) == [False]


# --- outcome classes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 201, 204, 299])
def test_any_2xx_completes_the_delivery(owner, receiver, status):
    endpoint, _secret, got, _event = one_queued(owner, receiver, status)

    drain(endpoint)

    d = only_delivery(endpoint)
    assert len(got) == 1
    assert d.status == WebhookDelivery.Status.DELIVERED
    assert (d.attempts, d.response_status, d.last_error) == (1, status, "")
    assert d.completed_at is not None


@pytest.mark.parametrize("status", [408, 425, 429, 500, 502, 503, 599])
def test_retryable_statuses_are_tried_again_after_the_paced_first_step(owner, receiver, clock, status):
    endpoint, _secret, got, _event = one_queued(owner, receiver, status)

    drain(endpoint)

    d = only_delivery(endpoint)
    assert len(got) == 1
    assert d.status == WebhookDelivery.Status.PENDING
    assert (d.attempts, d.publications, d.response_status) == (1, 1, status)
    assert d.last_error == f"HTTP {status}"
    assert d.completed_at is None
    # The schedule's first step is 1 minute; publications are paced 5 minutes apart, so 5 minutes it is.
    assert d.last_published_at == timezone.now()
    assert d.next_attempt_at == d.last_published_at + 5 * MIN
    assert fresh(endpoint).consecutive_failures == 0  # a retry is not a terminal failure

    clock.shift(5 * MIN - timedelta(seconds=1))
    drain(endpoint)
    assert len(got) == 1
    clock.shift(timedelta(seconds=1))
    drain(endpoint)
    assert len(got) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 410, 418, 422])
def test_other_statuses_fail_after_one_attempt(owner, receiver, clock, status):
    endpoint, _secret, got, _event = one_queued(owner, receiver, status)

    drain(endpoint)

    d = only_delivery(endpoint)
    assert d.status == WebhookDelivery.Status.FAILED
    assert (d.attempts, d.response_status, d.last_error) == (1, status, f"HTTP {status}")
    assert d.completed_at == timezone.now()
    ep = fresh(endpoint)
    # 410 is an ordinary terminal status: one failure in the streak, no special pause.
    assert (ep.consecutive_failures, ep.enabled, ep.paused) == (1, True, False)

    clock.shift(timedelta(days=3))
    drain(endpoint)
    assert len(got) == 1


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirects_are_not_followed_and_fail(owner, receiver, status):
    endpoint, _secret, got, _event = one_queued(
        owner,
        receiver,
        lambda request, n: Response("", status, headers={"Location": receiver.url_for("/elsewhere")}),
    )
    elsewhere = listen(receiver, 200, path="/elsewhere")

    drain(endpoint)

    assert len(got) == 1
    assert elsewhere == []
    assert [entry[0].path for entry in receiver.log] == [HOOK]
    d = only_delivery(endpoint)
    assert d.status == WebhookDelivery.Status.FAILED
    assert (d.attempts, d.response_status) == (1, status)


def test_a_network_error_is_retried_with_the_error_recorded(owner, loopback, clock):
    endpoint, _secret = make_endpoint(owner.organization, f"http://127.0.0.1:{closed_port()}/hook")
    record(owner.organization)
    delivery.fan_out()

    drain(endpoint)

    d = only_delivery(endpoint)
    assert d.status == WebhookDelivery.Status.PENDING
    assert d.attempts == 1
    assert d.response_status is None
    assert d.last_error
    assert not d.last_error.startswith("unsafe destination")
    assert d.next_attempt_at == timezone.now() + 5 * MIN


def test_the_request_timeout_is_ten_seconds():
    assert sender.TIMEOUT_SECONDS == 10


def test_a_receiver_slower_than_the_timeout_is_a_retry_with_error_timeout(owner, receiver, monkeypatch):
    monkeypatch.setattr(sender, "TIMEOUT_SECONDS", 0.5)

    def slow(request, n):
        time.sleep(1.2)
        return Response("late", 200)

    endpoint, _secret, got, _event = one_queued(owner, receiver, slow)
    started = time.monotonic()

    drain(endpoint)

    assert time.monotonic() - started < 5
    d = only_delivery(endpoint)
    assert len(got) == 1
    assert d.status == WebhookDelivery.Status.PENDING
    assert (d.attempts, d.response_status, d.last_error) == (1, None, "timeout")


# --- Retry-After ------------------------------------------------------------------------------------------------


def _http_date(offset: timedelta) -> str:
    return email.utils.format_datetime(timezone.now() + offset, usegmt=True)


# (status, Retry-After value (or a function of the frozen clock), attempts made before, expected delay from now).
# Before the third attempt the schedule step is 30 minutes, so "prior 2" cases show whether the header overrides it.
RETRY_AFTER_CASES = [
    pytest.param(503, "120", 0, 5 * MIN, id="120s-floored-by-5min-pacing"),
    pytest.param(503, "120", 2, 5 * MIN, id="120s-overrides-the-30min-step"),
    pytest.param(503, "0", 2, 5 * MIN, id="0s-overrides-the-30min-step-paced"),
    pytest.param(503, "3600", 0, HOUR, id="3600s"),
    pytest.param(429, "3600", 0, HOUR, id="429-3600s"),
    pytest.param(503, lambda: _http_date(2 * HOUR), 0, 2 * HOUR, id="http-date-2h"),
    pytest.param(503, lambda: _http_date(-HOUR), 2, 5 * MIN, id="http-date-in-the-past"),
    pytest.param(503, "999999", 0, 24 * HOUR, id="capped-at-24h"),
    pytest.param(503, lambda: _http_date(30 * HOUR), 0, 24 * HOUR, id="http-date-capped-at-24h"),
    pytest.param(503, "9" * 5000, 0, 24 * HOUR, id="huge-delta-seconds-capped-at-24h"),
    pytest.param(503, "soon", 2, 30 * MIN, id="garbage-means-the-schedule-step"),
    pytest.param(503, "-5", 2, 30 * MIN, id="negative-means-the-schedule-step"),
    pytest.param(503, "\u00b2", 2, 30 * MIN, id="non-ascii-digit-means-the-schedule-step"),
]


@pytest.mark.parametrize(("status", "retry_after", "prior", "expected"), RETRY_AFTER_CASES)
def test_a_valid_retry_after_overrides_the_schedule_step(owner, receiver, clock, status, retry_after, prior, expected):
    value = retry_after() if callable(retry_after) else retry_after
    endpoint, _secret, got, _event = one_queued(
        owner, receiver, lambda request, n: Response("busy", status, headers={"Retry-After": value})
    )
    if prior:
        update_delivery(
            only_delivery(endpoint), attempts=prior, publications=prior, last_published_at=timezone.now() - HOUR
        )

    drain(endpoint)

    d = only_delivery(endpoint)
    assert len(got) == 1
    assert d.status == WebhookDelivery.Status.PENDING
    assert d.attempts == prior + 1
    assert d.next_attempt_at == timezone.now() + expected


def test_retry_after_on_a_terminal_status_is_ignored(owner, receiver, clock):
    endpoint, _secret, _got, _event = one_queued(
        owner, receiver, lambda request, n: Response("no", 400, headers={"Retry-After": "60"})
    )

    drain(endpoint)

    d = only_delivery(endpoint)
    assert d.status == WebhookDelivery.Status.FAILED
    assert d.attempts == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("0", 0),
        ("120", 120),
        (" 120 ", 120),
        ("86400", 86400),
        ("86401", 86400),
        ("999999", 86400),
        ("9" * 5000, 86400),
        ("soon", None),
        ("-5", None),
        ("1.5", None),
        ("+5", None),
        ("12 0", None),
        ("\u00b2", None),  # a superscript two is str.isdigit() but not an HTTP DIGIT
        ("\u0661\u0662\u0660", None),  # Arabic-Indic digits: not HTTP delta-seconds either
    ],
)
def test_parse_retry_after_delta_seconds(value, expected):
    now = timezone.now()
    assert delivery.parse_retry_after(value, now) == expected


def test_parse_retry_after_http_dates():
    now = timezone.now().replace(microsecond=0)
    in_two_hours = email.utils.format_datetime(now + 2 * HOUR, usegmt=True)
    assert delivery.parse_retry_after(in_two_hours, now) == 7200
    assert delivery.parse_retry_after(email.utils.format_datetime(now - HOUR, usegmt=True), now) == 0
    assert delivery.parse_retry_after(email.utils.format_datetime(now + 72 * HOUR, usegmt=True), now) == 86400
    assert delivery.parse_retry_after("Mon, 99 Foo 2025 25:61:00 GMT", now) is None


# --- schedule and limits ----------------------------------------------------------------------------------------


def test_retries_walk_the_schedule_then_fail_after_seven_requests(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(owner, receiver, 500)
    # Steps after attempts 1-6: 1 min (paced up to 5 min), 5 min, 30 min, 2 h, 8 h, 24 h.
    gaps = [5 * MIN, 5 * MIN, 30 * MIN, 2 * HOUR, 8 * HOUR, 24 * HOUR]
    at = timezone.now()
    started = at

    for n in range(1, 8):
        if n > 1:
            clock.move_to(at - timedelta(seconds=1))
            drain(endpoint)
            assert len(got) == n - 1, f"attempt {n} went out early"
            clock.move_to(at)
        drain(endpoint)
        assert len(got) == n
        d = only_delivery(endpoint)
        assert (d.attempts, d.publications, d.last_published_at) == (n, n, at)
        assert int(got[-1].headers["X-Service-Timestamp"]) == int(at.timestamp())
        if n < 7:
            assert d.status == WebhookDelivery.Status.PENDING
            assert d.next_attempt_at == at + gaps[n - 1]
            at = d.next_attempt_at

    assert at - started == timedelta(hours=34, minutes=40)
    assert d.status == WebhookDelivery.Status.FAILED
    assert d.last_error in ("retries exhausted", "HTTP 500")
    assert d.completed_at == at
    assert len({r.delivery_id for r in got}) == 1

    clock.shift(timedelta(days=5))
    drain(endpoint)
    assert len(got) == 7


def test_a_retry_that_would_land_after_the_48_hour_deadline_fails(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(
        owner, receiver, lambda request, n: Response("busy", 503, headers={"Retry-After": "86400"})
    )
    assert only_delivery(endpoint).deadline_at == timezone.now() + 48 * HOUR

    drain(endpoint)
    assert only_delivery(endpoint).next_attempt_at == timezone.now() + 24 * HOUR
    clock.shift(24 * HOUR)
    drain(endpoint)

    d = only_delivery(endpoint)
    assert len(got) == 2
    assert d.status == WebhookDelivery.Status.FAILED
    clock.shift(48 * HOUR)
    drain(endpoint)
    assert len(got) == 2


def test_a_first_retry_past_a_near_deadline_fails(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(owner, receiver, 500)
    update_delivery(only_delivery(endpoint), deadline_at=timezone.now() + 4 * MIN)

    drain(endpoint)

    assert len(got) == 1
    assert only_delivery(endpoint).status == WebhookDelivery.Status.FAILED


def test_a_delivery_past_its_deadline_is_never_sent(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(owner, receiver)
    update_delivery(only_delivery(endpoint), deadline_at=timezone.now() - timedelta(seconds=1))

    drain(endpoint)

    d = only_delivery(endpoint)
    assert got == []
    assert d.status == WebhookDelivery.Status.FAILED
    assert d.last_error == "retries exhausted"


def test_a_delivery_with_seven_publications_is_never_sent_again(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(owner, receiver)
    # Seven hand-outs already (workers lost mid-request), the last lease long expired.
    update_delivery(
        only_delivery(endpoint),
        status=WebhookDelivery.Status.IN_FLIGHT,
        attempts=3,
        publications=7,
        last_published_at=timezone.now() - HOUR,
        lease_expires_at=timezone.now() - 50 * MIN,
    )

    drain(endpoint)

    d = only_delivery(endpoint)
    assert got == []
    assert d.status == WebhookDelivery.Status.FAILED
    assert d.attempts == 3


def test_a_delivery_is_never_handed_out_twice_within_five_minutes(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(owner, receiver, 500)
    drain(endpoint)
    d = only_delivery(endpoint)
    assert d.status == WebhookDelivery.Status.PENDING
    # Even if it were due at once (say a Retry-After of 0), the last hand-out was just now.
    update_delivery(d, next_attempt_at=timezone.now() - timedelta(seconds=1))

    assert delivery._claim(fresh(endpoint), timezone.now(), 10) == []
    assert endpoint.id not in delivery.due_endpoint_ids()
    clock.shift(5 * MIN - timedelta(seconds=1))
    assert delivery._claim(fresh(endpoint), timezone.now(), 10) == []
    drain(endpoint)
    assert len(got) == 1

    clock.shift(timedelta(seconds=1))
    assert endpoint.id in delivery.due_endpoint_ids()
    assert [c.id for c in delivery._claim(fresh(endpoint), timezone.now(), 10)] == [d.id]


# --- ordering and the lease -------------------------------------------------------------------------------------


def test_per_endpoint_the_oldest_due_delivery_goes_first(owner, receiver):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    events = [record(owner.organization) for _ in range(5)]
    delivery.fan_out()

    drain(endpoint)

    assert [r.envelope["id"] for r in got] == [str(e.id) for e in events]
    created = [r.envelope["createdAt"] for r in got]
    assert created == sorted(created)


def test_one_fan_out_batch_keeps_event_order_even_when_the_clock_has_not_moved(owner, receiver, clock):
    """Events recorded a second apart, fanned out in one batch at one instant: their deliveries tie on
    next_attempt_at and created_at. The oldest (the older event) must still go first, not a random uuid order."""
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    events = []
    for _ in range(8):
        events.append(record(owner.organization))
        clock.shift(timedelta(seconds=1))
    delivery.fan_out()

    drain(endpoint)

    assert [r.envelope["id"] for r in got] == [str(e.id) for e in events]


def test_an_older_retry_that_is_not_due_yet_lets_newer_due_work_through(owner, receiver, clock):
    replies = iter([500, 200, 200])
    endpoint, _secret, got, first = one_queued(owner, receiver, lambda request, n: Response("", next(replies)))
    drain(endpoint)  # the first event: 500, due again in 5 minutes
    second = record(owner.organization)
    delivery.fan_out()
    clock.shift(MIN)

    drain(endpoint)
    clock.shift(4 * MIN)
    drain(endpoint)

    assert [r.envelope["id"] for r in got] == [str(first.id), str(second.id), str(first.id)]


def test_the_current_test_goes_before_held_ordinary_deliveries(owner, receiver, clock):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    events = []
    for _ in range(3):
        events.append(record(owner.organization))
        delivery.fan_out()
        clock.shift(timedelta(seconds=1))
    test = services.endpoint_test(organization=owner.organization, endpoint=endpoint)

    drain(endpoint)

    assert len(got) == 4
    assert got[0].delivery_id == str(test.id)
    assert [r.envelope["id"] for r in got[1:]] == [str(e.id) for e in events]


def test_a_paused_endpoint_holds_ordinary_deliveries_but_runs_its_test(owner, receiver, clock):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    record(owner.organization)
    delivery.fan_out()
    services.endpoint_pause(organization=owner.organization, endpoint=endpoint)
    test = services.endpoint_test(organization=owner.organization, endpoint=endpoint)

    drain(endpoint)

    assert [r.delivery_id for r in got] == [str(test.id)]
    held = [d for d in deliveries_of(endpoint) if d.kind == WebhookDelivery.Kind.EVENT]
    assert [(d.status, d.attempts) for d in held] == [(WebhookDelivery.Status.PENDING, 0)]


def test_while_another_worker_holds_the_lease_drain_does_nothing(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(owner, receiver)
    WebhookEndpoint.objects.for_org(owner.organization).filter(id=endpoint.id).update(
        lease_until=timezone.now() + timedelta(seconds=30)
    )

    result = drain(endpoint)

    assert (result.sent, got) == (0, [])
    assert only_delivery(endpoint).status == WebhookDelivery.Status.PENDING
    assert only_delivery(endpoint).publications == 0

    clock.shift(timedelta(seconds=31))  # that worker is gone: its lease ran out
    assert drain(endpoint).sent == 1
    assert len(got) == 1


def test_a_slow_batch_keeps_its_lease_so_no_second_worker_sends_meanwhile(owner, receiver, clock, monkeypatch):
    """Every request takes 9 s (under the 10 s timeout). Half a minute into worker A's batch a second worker
    calls drain_endpoint for the same endpoint: A is alive and sending, so only one lease may be active."""
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    events = []
    for _ in range(30):
        events.append(record(owner.organization))
        delivery.fan_out()
        clock.shift(timedelta(seconds=1))
    real_post = sender.post
    second_worker: list = []

    def nine_second_post(url, body, headers):
        outcome = real_post(url, body, headers)
        clock.shift(timedelta(seconds=9))
        if len(got) == 8 and not second_worker:
            second_worker.append("running")
            second_worker[0] = drain(endpoint).sent
        return outcome

    monkeypatch.setattr(sender, "post", nine_second_post)

    while drain(endpoint).more:
        pass

    assert second_worker == [0]
    assert [r.envelope["id"] for r in got] == [str(e.id) for e in events]


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_workers_deliver_each_once_and_in_order_per_endpoint(owner, receiver):
    organization = owner.organization
    endpoints = [make_endpoint(organization, receiver.url_for(f"/hook-{i}"))[0] for i in range(2)]
    received = {endpoint.id: listen(receiver, path=f"/hook-{i}") for i, endpoint in enumerate(endpoints)}
    emitted = []
    for _ in range(15):
        emitted.append(record(organization))
        delivery.fan_out()  # one batch per event, so ordering rests on distinct timestamps
    total = WebhookDelivery.objects.for_org(organization).count()
    assert total == 30
    barrier = threading.Barrier(2)
    sent = []

    def worker():
        barrier.wait(timeout=10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for endpoint in endpoints:
                sent.append(delivery.drain_endpoint(endpoint.id, max_deliveries=2).sent)
            open_work = WebhookDelivery.objects.for_org(organization).exclude(
                status__in=[WebhookDelivery.Status.DELIVERED, WebhookDelivery.Status.FAILED]
            )
            if not open_work.exists():
                return
            time.sleep(0.002)

    assert run_in_threads(worker, timeout=90) == []
    statuses = set(WebhookDelivery.objects.for_org(organization).values_list("status", flat=True))
    assert statuses == {WebhookDelivery.Status.DELIVERED}
    assert sum(sent) == 30
    all_ids = [r.delivery_id for got in received.values() for r in got]
    assert len(all_ids) == len(set(all_ids)) == 30
    for endpoint in endpoints:
        assert [r.envelope["id"] for r in received[endpoint.id]] == [str(e.id) for e in emitted]
    assert all(d.attempts == 1 for d in WebhookDelivery.objects.for_org(organization))


def test_a_lost_lease_is_sent_again_at_least_once(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(owner, receiver)
    # A worker claimed it 6 minutes ago and died mid-request: in flight, lease long expired.
    update_delivery(
        only_delivery(endpoint),
        status=WebhookDelivery.Status.IN_FLIGHT,
        publications=1,
        last_published_at=timezone.now() - 6 * MIN,
        lease_expires_at=timezone.now() - 5 * MIN,
    )
    assert endpoint.id in delivery.due_endpoint_ids()

    drain(endpoint)

    d = only_delivery(endpoint)
    assert len(got) == 1
    assert d.status == WebhookDelivery.Status.DELIVERED
    assert (d.publications, d.attempts) == (2, 1)


def test_an_in_flight_delivery_is_left_alone_while_its_lease_lasts(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(owner, receiver)
    update_delivery(
        only_delivery(endpoint),
        status=WebhookDelivery.Status.IN_FLIGHT,
        publications=1,
        last_published_at=timezone.now() - 6 * MIN,
        lease_expires_at=timezone.now() + timedelta(seconds=30),
    )

    drain(endpoint)
    assert got == []

    clock.shift(timedelta(seconds=31))
    drain(endpoint)
    assert len(got) == 1


def test_a_lost_lease_waits_for_the_five_minute_pacing(owner, receiver, clock):
    endpoint, _secret, got, _event = one_queued(owner, receiver)
    update_delivery(
        only_delivery(endpoint),
        status=WebhookDelivery.Status.IN_FLIGHT,
        publications=1,
        last_published_at=timezone.now() - 2 * MIN,
        lease_expires_at=timezone.now() - MIN,
    )

    drain(endpoint)
    assert got == []

    clock.shift(3 * MIN)
    drain(endpoint)
    assert len(got) == 1


# --- auto-pause -------------------------------------------------------------------------------------------------


def test_twenty_consecutive_terminal_failures_disable_and_pause_the_endpoint(owner, receiver):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    witness, _ = make_endpoint(owner.organization, receiver.url_for("/witness"))
    got = listen(receiver, 400)
    listen(receiver, 200, path="/witness")
    for _ in range(20):
        record(owner.organization)
    delivery.fan_out()

    drain(endpoint)

    ep = fresh(endpoint)
    assert len(got) == 20
    assert (ep.enabled, ep.paused, ep.paused_reason) == (False, True, "consecutive_failures")
    assert ep.consecutive_failures == 20
    assert ep.status == "paused"

    record(owner.organization)
    delivery.fan_out()
    assert len(deliveries_of(endpoint)) == 20
    assert len(deliveries_of(witness)) == 21


def test_an_endpoint_paused_mid_batch_is_sent_nothing_more(owner, receiver, clock):
    """25 due deliveries, every one answered 400: the 20th failure pauses the endpoint, and the five after it
    must not go out to the paused endpoint (they stay held, and go out once it is enabled again)."""
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver, lambda request, n: Response("", 400 if n <= 20 else 200))
    for _ in range(25):
        record(owner.organization)
        clock.shift(timedelta(seconds=1))
    delivery.fan_out()

    drain(endpoint)

    assert len(got) == 20
    assert fresh(endpoint).paused
    rest = [d for d in deliveries_of(endpoint) if d.attempts == 0]
    assert len(rest) == 5
    assert {d.status for d in rest} <= {WebhookDelivery.Status.PENDING, WebhookDelivery.Status.IN_FLIGHT}

    services.endpoint_enable(organization=owner.organization, endpoint=endpoint)
    clock.shift(10 * MIN)
    drain(endpoint)
    assert len(got) == 25
    assert {fresh_delivery(d).status for d in rest} == {WebhookDelivery.Status.DELIVERED}


def fresh_delivery(d: WebhookDelivery) -> WebhookDelivery:
    return WebhookDelivery.objects.for_org(d.organization_id).get(id=d.id)


def test_a_success_resets_the_failure_streak(owner, receiver):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver, lambda request, n: Response("", 400 if n <= 19 else 200))
    for _ in range(20):
        record(owner.organization)
    delivery.fan_out()

    drain(endpoint)

    ep = fresh(endpoint)
    assert len(got) == 20
    assert ep.consecutive_failures == 0
    assert (ep.enabled, ep.paused) == (True, False)


def test_test_delivery_failures_do_not_count_towards_the_pause(owner, receiver):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK), consecutive_failures=19)
    got = listen(receiver, 400)

    test = services.endpoint_test(organization=owner.organization, endpoint=endpoint)
    drain(endpoint)

    assert fresh_delivery(test).status == WebhookDelivery.Status.FAILED
    ep = fresh(endpoint)
    assert (ep.consecutive_failures, ep.enabled, ep.paused) == (19, True, False)

    record(owner.organization)  # one real failure makes twenty
    delivery.fan_out()
    drain(endpoint)
    ep = fresh(endpoint)
    assert len(got) == 2
    assert (ep.consecutive_failures, ep.enabled, ep.paused) == (20, False, True)


def test_the_streak_restarts_from_a_success_in_the_middle_of_a_batch(owner, receiver):
    """19 failures, a success, 19 failures: the streak is 19 (not 38), so the endpoint stays enabled; one more
    terminal failure makes 20 and pauses it. The success's reset and the failures after it are both counted."""
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver, lambda request, n: Response("", 200 if n == 20 else 400))
    for _ in range(39):
        record(owner.organization)
    delivery.fan_out()

    while drain(endpoint).more:
        pass

    ep = fresh(endpoint)
    assert len(got) == 39
    assert (ep.consecutive_failures, ep.enabled, ep.paused) == (19, True, False)

    record(owner.organization)
    delivery.fan_out()
    drain(endpoint)
    ep = fresh(endpoint)
    assert (ep.consecutive_failures, ep.enabled, ep.paused) == (20, False, True)


def test_a_success_resets_a_streak_read_with_the_lease(owner, receiver):
    endpoint, _secret, got, _event = one_queued(owner, receiver, consecutive_failures=7)

    drain(endpoint)

    assert len(got) == 1
    assert fresh(endpoint).consecutive_failures == 0


# --- statements per delivery ------------------------------------------------------------------------------------


def ok(status=200) -> sender.Outcome:
    return sender.Outcome(status, "", "ok", None, {})


def test_a_success_on_an_endpoint_known_to_be_at_zero_is_one_update_of_the_changed_columns(
    owner, receiver, django_assert_num_queries
):
    endpoint, _secret, _got, _event = one_queued(owner, receiver)
    queued = only_delivery(endpoint)
    assert endpoint.consecutive_failures == 0

    with django_assert_num_queries(1) as captured:
        assert delivery.record_outcome(endpoint, queued, ok()) == delivery.Delivered

    [sql] = [q["sql"] for q in captured.captured_queries]
    assert sql.startswith('UPDATE "webhooks_webhookdelivery"')
    assert '"body"' not in sql  # never rewrite the payload
    d = only_delivery(endpoint)
    assert (d.status, d.attempts, d.response_status, d.response_snippet) == ("delivered", 1, 200, "ok")
    assert d.completed_at is not None and d.lease_expires_at is None
    assert d.body == queued.body


def test_the_streak_is_reset_once_and_is_unknown_after_a_failure(owner, receiver, django_assert_num_queries):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK), consecutive_failures=3)
    for _ in range(4):
        record(owner.organization)
    delivery.fan_out()
    first, second, third, fourth = deliveries_of(endpoint)

    def endpoint_updates(captured):
        return [q for q in captured if q["sql"].startswith('UPDATE "webhooks_webhookendpoint"')]

    with django_assert_num_queries(4) as captured:  # savepoint, delivery, endpoint streak, release
        delivery.record_outcome(endpoint, first, ok())
    assert len(endpoint_updates(captured.captured_queries)) == 1
    assert (endpoint.consecutive_failures, fresh(endpoint).consecutive_failures) == (0, 0)

    with django_assert_num_queries(1):  # known to be 0 now: the delivery's UPDATE only
        delivery.record_outcome(endpoint, second, ok())

    delivery.record_outcome(endpoint, third, ok(400))
    assert endpoint.consecutive_failures is None
    assert fresh(endpoint).consecutive_failures == 1

    with django_assert_num_queries(4) as captured:  # unknown after a failure: the success resets it
        delivery.record_outcome(endpoint, fourth, ok())
    assert len(endpoint_updates(captured.captured_queries)) == 1
    assert fresh(endpoint).consecutive_failures == 0


def test_a_retry_writes_only_the_changed_columns(owner, receiver, clock):
    endpoint, _secret, _got, _event = one_queued(owner, receiver)
    queued = only_delivery(endpoint)
    queued.last_published_at = timezone.now()

    with CaptureQueriesContext(connection) as captured:
        verdict = delivery.record_outcome(endpoint, queued, sender.Outcome(503, "", "busy", "120", {}))

    assert verdict == delivery.Retry
    [sql] = [q["sql"] for q in captured.captured_queries]
    assert sql.startswith('UPDATE "webhooks_webhookdelivery"') and '"body"' not in sql
    d = only_delivery(endpoint)
    assert (d.status, d.attempts, d.response_status, d.last_error) == ("pending", 1, 503, "HTTP 503")
    assert d.next_attempt_at == timezone.now() + 5 * MIN  # Retry-After 2 min, paced to 5
    assert d.completed_at is None


def test_a_drain_sends_each_delivery_with_one_endpoint_statement_and_one_delivery_update(owner, receiver):
    """Per delivery: the lease renewal that also re-reads the endpoint, and the outcome's UPDATE. No SELECT of the
    endpoint and no streak UPDATE while the streak is known to be 0."""
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    for _ in range(5):
        record(owner.organization)
    delivery.fan_out()

    with CaptureQueriesContext(connection) as captured:
        assert drain(endpoint).sent == 5

    assert len(got) == 5
    statements = [" ".join(q["sql"].split()) for q in captured.captured_queries]
    renewals = [s for s in statements if s.startswith("UPDATE webhooks_webhookendpoint SET lease_until")]
    endpoint_selects = [s for s in statements if s.startswith('SELECT "webhooks_webhookendpoint"')]
    outcome_updates = [
        s for s in statements if s.startswith('UPDATE "webhooks_webhookdelivery" SET "status" = \'delivered\'')
    ]
    assert len(renewals) == 5 and all("RETURNING" in s for s in renewals)
    assert len(endpoint_selects) == 1  # with the lease, once per drain
    assert len(outcome_updates) == 5
    assert not any(s.startswith("UPDATE") and "consecutive_failures" in s for s in statements)


def drain_with_a_change_after_the_first_send(owner, receiver, clock, monkeypatch, change):
    """Three due deliveries; `change(endpoint)` happens while the first one is in flight. Returns (endpoint, got)."""
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    for _ in range(3):
        record(owner.organization)
        clock.shift(timedelta(seconds=1))
    delivery.fan_out()
    real_post = sender.post

    def changed_while_in_flight(url, body, headers):
        outcome = real_post(url, body, headers)
        if len(got) == 1:
            change(endpoint)
        return outcome

    monkeypatch.setattr(sender, "post", changed_while_in_flight)
    assert drain(endpoint).sent == 1
    return endpoint, got


def test_a_lease_lost_mid_batch_hands_the_rest_back_unsent(owner, receiver, clock, monkeypatch):
    def another_worker_takes_the_lease(endpoint):
        WebhookEndpoint.objects.unscoped().filter(id=endpoint.id).update(lease_until=timezone.now() + 2 * MIN)

    endpoint, got = drain_with_a_change_after_the_first_send(
        owner, receiver, clock, monkeypatch, another_worker_takes_the_lease
    )

    assert len(got) == 1
    rest = [d for d in deliveries_of(endpoint) if d.attempts == 0]
    assert [(d.status, d.publications) for d in rest] == [("pending", 0)] * 2


def test_an_endpoint_archived_mid_batch_is_sent_nothing_more(owner, receiver, clock, monkeypatch):
    def archive(endpoint):
        services.endpoint_archive(organization=owner.organization, endpoint=endpoint)

    endpoint, got = drain_with_a_change_after_the_first_send(owner, receiver, clock, monkeypatch, archive)

    assert len(got) == 1
    assert sorted(d.status for d in deliveries_of(endpoint)) == ["delivered", "failed", "failed"]


@pytest.mark.parametrize("statement", ["claim", "expire"])
def test_the_claim_and_the_per_drain_expiry_can_use_the_queue_index(owner, receiver, statement):
    """The partial index's predicate (status IN pending, in_flight) must follow from each statement's WHERE, and
    its leading columns (practice, endpoint) must be named, or PostgreSQL cannot use it. On a test-sized table the
    planner may prefer another index, so the others are dropped (rolled back) to ask only whether it can."""
    endpoint, _secret, _got, _event = one_queued(owner, receiver)
    with CaptureQueriesContext(connection) as captured:
        if statement == "claim":
            delivery._claim(endpoint, timezone.now(), delivery.CLAIM_BATCH)
        else:
            delivery.expire_exhausted(endpoint=endpoint)
    sql = next(q["sql"] for q in captured.captured_queries if "webhooks_webhookdelivery" in q["sql"][:120])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'webhooks_webhookdelivery' "
            "AND indexname NOT IN ('webhooks_delivery_queue_idx', 'webhooks_webhookdelivery_pkey')"
        )
        for (other,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX "{other}"')
        cursor.execute("EXPLAIN " + sql)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    assert "webhooks_delivery_queue_idx" in plan, plan


# --- fan-out ----------------------------------------------------------------------------------------------------


def test_only_enabled_unpaused_unarchived_subscribed_endpoints_of_the_practice_get_a_delivery(
    owner, outsider, loopback
):
    org = owner.organization
    url = "http://127.0.0.1:9/hook"
    subscribed, _ = make_endpoint(org, url)
    other_type, _ = make_endpoint(org, url, events=["patient.updated"])
    disabled, _ = make_endpoint(org, url, enabled=False)
    paused, _ = make_endpoint(org, url, paused=True, paused_reason="manual")
    archived, _ = make_endpoint(org, url)
    services.endpoint_archive(organization=org, endpoint=archived)
    theirs, _ = make_endpoint(outsider.organization, url)

    event = record(org)
    processed, touched = delivery.fan_out()

    assert processed == 1
    assert touched == {subscribed.id}
    [d] = deliveries_of(subscribed)
    assert (d.logical_id, d.event_id, d.event_type, d.kind) == (event.id, event.id, "patient.created", "event")
    assert d.organization_id == org.id
    assert d.status == WebhookDelivery.Status.PENDING
    for endpoint in (other_type, disabled, paused, archived, theirs):
        assert deliveries_of(endpoint) == []
    assert Event.objects.for_org(org).get(id=event.id).fanned_out_at is not None


def test_a_practice_never_receives_another_practices_events(owner, outsider, receiver):
    mine, _ = make_endpoint(owner.organization, receiver.url_for("/mine"))
    theirs, _ = make_endpoint(outsider.organization, receiver.url_for("/theirs"))
    got_mine = listen(receiver, path="/mine")
    got_theirs = listen(receiver, path="/theirs")
    my_event = record(owner.organization)
    their_event = record(outsider.organization)

    delivery.fan_out()
    drain(mine)
    drain(theirs)

    assert [r.envelope["id"] for r in got_mine] == [str(my_event.id)]
    assert [r.envelope["id"] for r in got_theirs] == [str(their_event.id)]
    assert got_mine[0].envelope["organizationId"] == str(owner.organization.id)
    assert got_theirs[0].envelope["organizationId"] == str(outsider.organization.id)
    assert {d.organization_id for d in deliveries_of(theirs)} == {outsider.organization.id}


def test_each_event_is_fanned_out_once_when_fan_out_runs_again(owner, loopback):
    endpoint, _ = make_endpoint(owner.organization, "http://127.0.0.1:9/hook")
    record(owner.organization)

    assert delivery.fan_out()[0] == 1
    assert delivery.fan_out() == (0, set())
    assert len(deliveries_of(endpoint)) == 1


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_fan_outs_make_each_delivery_exactly_once(owner, loopback):
    organization = owner.organization
    endpoints = [make_endpoint(organization, f"http://127.0.0.1:9/hook-{i}")[0] for i in range(2)]
    with transaction.atomic():
        events = [
            emit(
                organization=organization,
                type="patient.created",
                subject_type="patient",
                subject_id=uuid.uuid4(),
                actor=Actor.system(),
            )
            for _ in range(60)
        ]
    barrier = threading.Barrier(2)
    processed = []

    def worker():
        barrier.wait(timeout=10)
        while True:
            count, _touched = delivery.fan_out(limit=7)
            processed.append(count)
            if count == 0:
                return

    assert run_in_threads(worker, timeout=60) == []
    assert delivery.fan_out() == (0, set())
    assert sum(processed) == 60
    for endpoint in endpoints:
        event_ids = [d.event_id for d in deliveries_of(endpoint)]
        assert len(event_ids) == 60
        assert set(event_ids) == {e.id for e in events}


def test_an_event_in_a_rolled_back_transaction_produces_nothing(owner, loopback):
    endpoint, _ = make_endpoint(owner.organization, "http://127.0.0.1:9/hook")

    with pytest.raises(RuntimeError), transaction.atomic():
        emit(
            organization=owner.organization,
            type="patient.created",
            subject_type="patient",
            subject_id=uuid.uuid4(),
            actor=Actor.system(),
        )
        raise RuntimeError("the change failed")

    assert delivery.fan_out() == (0, set())
    assert Event.objects.for_org(owner.organization).count() == 0
    assert deliveries_of(endpoint) == []


def test_archiving_an_endpoint_fails_its_queued_deliveries(owner, receiver):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    record(owner.organization)
    delivery.fan_out()
    drain(endpoint)
    record(owner.organization)
    record(owner.organization)
    delivery.fan_out()

    services.endpoint_archive(organization=owner.organization, endpoint=endpoint)

    statuses = sorted((d.status, d.last_error) for d in deliveries_of(endpoint))
    assert statuses == [
        (WebhookDelivery.Status.DELIVERED, ""),
        (WebhookDelivery.Status.FAILED, "endpoint archived"),
        (WebhookDelivery.Status.FAILED, "endpoint archived"),
    ]
    assert all(d.completed_at for d in deliveries_of(endpoint))
    assert drain(endpoint).sent == 0
    record(owner.organization)
    delivery.fan_out()
    assert len(deliveries_of(endpoint)) == 3
    assert len(got) == 1


# --- emission helpers and replay --------------------------------------------------------------------------------


def test_the_same_idempotency_key_is_one_logical_event_and_one_delivery(owner, outsider, loopback):
    org = owner.organization
    endpoint, _ = make_endpoint(org, "http://127.0.0.1:9/hook")
    second_endpoint, _ = make_endpoint(org, "http://127.0.0.1:9/other")
    first = record(org, idempotency_key="pms:provider-item-42")
    delivery.fan_out()

    again = record(org, idempotency_key="pms:provider-item-42")  # a provider retry / queue redelivery
    delivery.fan_out()
    with transaction.atomic():
        twice = [
            emit(
                organization=org,
                type="patient.created",
                subject_type="patient",
                subject_id=first.subject_id,
                actor=Actor.system(),
                idempotency_key="pms:provider-item-42",
            )
            for _ in range(2)
        ]
    delivery.fan_out()

    assert again.id == first.id
    assert [e.id for e in twice] == [first.id, first.id]
    assert Event.objects.for_org(org).count() == 1
    for each in (endpoint, second_endpoint):
        [d] = deliveries_of(each)
        assert d.logical_id == first.id
    # The key is scoped to the practice: another practice's same key is its own event.
    theirs = record(outsider.organization, idempotency_key="pms:provider-item-42")
    assert theirs.id != first.id


def test_a_replay_is_a_new_physical_delivery_with_the_same_envelope_and_bytes(owner, receiver):
    endpoint, secret, got, event = one_queued(owner, receiver)
    drain(endpoint)
    original = only_delivery(endpoint)

    replay = services.delivery_replay(organization=owner.organization, delivery=original)
    drain(endpoint)

    assert len(got) == 2
    assert replay.id != original.id
    assert replay.kind == WebhookDelivery.Kind.REPLAY
    assert [r.delivery_id for r in got] == [str(original.id), str(replay.id)]
    assert got[1].body == got[0].body
    assert got[1].envelope["id"] == got[0].envelope["id"] == str(event.id)
    assert verifies(secret, got[1]) == [True]
    assert fresh_delivery(replay).status == WebhookDelivery.Status.DELIVERED
    assert fresh_delivery(replay).logical_id == event.id


# --- size bounds ------------------------------------------------------------------------------------------------


def _queue_body(endpoint, body: str) -> WebhookDelivery:
    row = delivery.new_delivery(
        endpoint=endpoint,
        body=body,
        logical_id=uuid.uuid4(),
        event_type="patient.created",
        kind=WebhookDelivery.Kind.EVENT,
    )
    row.save(force_insert=True)
    return row


def _padded(size: int) -> str:
    body = '{"pad":"' + "a" * (size - 10) + '"}'
    assert len(body.encode()) == size
    return body


def test_a_body_over_64_kib_is_never_sent_and_fails(owner, receiver, clock):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    big = _queue_body(endpoint, _padded(64 * 1024 + 1))

    drain(endpoint)

    d = fresh_delivery(big)
    assert got == []
    assert d.status == WebhookDelivery.Status.FAILED
    assert "65536" in d.last_error or "64 KiB" in d.last_error
    clock.shift(timedelta(days=2))
    drain(endpoint)
    assert got == []


def test_a_body_of_exactly_64_kib_is_sent(owner, receiver):
    endpoint, _secret = make_endpoint(owner.organization, receiver.url_for(HOOK))
    got = listen(receiver)
    row = _queue_body(endpoint, _padded(64 * 1024))

    drain(endpoint)

    assert len(got) == 1
    assert len(got[0].body) == 64 * 1024
    assert fresh_delivery(row).status == WebhookDelivery.Status.DELIVERED


@pytest.mark.parametrize("status", [200, 500])
def test_the_captured_response_is_bounded(owner, receiver, status):
    endpoint, _secret, got, _event = one_queued(owner, receiver, lambda request, n: Response("x" * 200_000, status))

    drain(endpoint)

    d = only_delivery(endpoint)
    assert len(got) == 1
    assert d.response_status == status
    assert d.response_snippet == "x" * 2048


# --- retention --------------------------------------------------------------------------------------------------


def test_finished_deliveries_older_than_30_days_are_purged(owner, loopback):
    endpoint, _ = make_endpoint(owner.organization, "http://127.0.0.1:9/hook")
    now = timezone.now()

    def row(status, completed_days_ago=None):
        d = _queue_body(endpoint, "{}")
        completed = now - timedelta(days=completed_days_ago) if completed_days_ago is not None else None
        update_delivery(d, status=status, completed_at=completed)
        WebhookDelivery.objects.for_org(d.organization_id).filter(id=d.id).update(created_at=now - timedelta(days=40))
        return d.id

    old_delivered = row(WebhookDelivery.Status.DELIVERED, 31)
    old_failed = row(WebhookDelivery.Status.FAILED, 30.5)
    young_delivered = row(WebhookDelivery.Status.DELIVERED, 29)
    young_failed = row(WebhookDelivery.Status.FAILED, 1)
    pending = row(WebhookDelivery.Status.PENDING)

    assert delivery.purge_finished() == 2

    left = {d.id for d in deliveries_of(endpoint)}
    assert left == {young_delivered, young_failed, pending}
    assert old_delivered not in left and old_failed not in left
    assert delivery.purge_finished() == 0
