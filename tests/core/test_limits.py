"""Rate limits against real Redis: the token bucket (one Lua script on Redis TIME) and per-minute windows."""

import copy
import threading
from datetime import UTC, datetime

import pytest
from django.test import RequestFactory
from django_redis import get_redis_connection

from apps.accounts.errors import InvalidCredentials
from apps.core.errors import RateLimited, ServiceUnavailable
from apps.core.limits import MinuteWindowLimit, TokenBucketLimit, client_address_block, take_token


@pytest.fixture
def redis_down(settings):
    """The default cache points at a port nothing listens on."""
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["LOCATION"] = "redis://127.0.0.1:1/0"
    settings.CACHES = caches


def _redis_now() -> float:
    seconds, microseconds = get_redis_connection("default").time()
    return seconds + microseconds / 1_000_000


# --- take_token -------------------------------------------------------------------------------------------------


def test_burst_then_refusal_with_retry_after():
    results = [take_token("burst", burst=5, per_second=2) for _ in range(6)]

    assert results == [(True, 0)] * 5 + [(False, 1)]


def test_retry_after_is_rounded_up_to_whole_seconds():
    # One token every 4 s: right after the burst the next token is ~4 s away.
    assert take_token("slow", burst=1, per_second=0.25) == (True, 0)

    assert take_token("slow", burst=1, per_second=0.25) == (False, 4)


def test_cost_above_one_takes_several_tokens():
    assert take_token("cost", burst=5, per_second=0.001, cost=3) == (True, 0)
    allowed, retry_after = take_token("cost", burst=5, per_second=0.001, cost=3)

    assert allowed is False
    assert retry_after >= 1000  # one more token at 0.001/s is ~1000 s away
    assert take_token("cost", burst=5, per_second=0.001, cost=2)[0] is True


def test_buckets_are_independent_per_key():
    for _ in range(2):
        assert take_token("a", burst=2, per_second=0.001) == (True, 0)
    assert take_token("a", burst=2, per_second=0.001)[0] is False

    assert take_token("b", burst=2, per_second=0.001) == (True, 0)


def test_bucket_refills_over_redis_time():
    assert take_token("refill", burst=1, per_second=50) == (True, 0)
    assert take_token("refill", burst=1, per_second=50) == (False, 1)

    # A token comes back after ~20 ms of Redis time; give up after one second.
    deadline = _redis_now() + 1.0
    while True:
        allowed, _ = take_token("refill", burst=1, per_second=50)
        if allowed or _redis_now() > deadline:
            break
    assert allowed is True


def test_bucket_state_expires_once_it_would_be_full_again():
    take_token("expiry", burst=10, per_second=5)

    ttl_ms = get_redis_connection("default").pttl("svc:tb:expiry")

    assert 0 < ttl_ms <= 10 * 1000 / 5 + 1000


def test_concurrent_takers_never_exceed_the_burst():
    barrier = threading.Barrier(20)
    results = []
    lock = threading.Lock()

    def take():
        barrier.wait(timeout=5)
        outcome = take_token("race", burst=10, per_second=0.001)
        with lock:
            results.append(outcome[0])

    threads = [threading.Thread(target=take) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert len(results) == 20
    assert results.count(True) == 10


# --- TokenBucketLimit -------------------------------------------------------------------------------------------


def _bucket(**kwargs) -> TokenBucketLimit:
    return TokenBucketLimit("test", key=lambda request, view: "one", **{"burst": 2, "per_second": 0.001, **kwargs})


def test_token_bucket_limit_raises_rate_limited_with_retry_after():
    limit = _bucket()
    limit.check(None, None)
    limit.check(None, None)

    with pytest.raises(RateLimited) as caught:
        limit.check(None, None)

    error = caught.value
    assert error.status_code == 429
    assert error.code == "RATE_LIMITED"
    assert error.retry_after >= 1
    assert error.headers() == {"Retry-After": str(error.retry_after)}
    assert error.body() == {
        "code": "RATE_LIMITED",
        "message": "Too many requests; retry later.",
        "details": {"retryAfter": error.retry_after},
    }


def test_token_bucket_limit_uses_its_own_code():
    limit = _bucket(burst=1, code="SOMETHING_LIMITED")
    limit.check(None, None)

    with pytest.raises(RateLimited) as caught:
        limit.check(None, None)

    assert caught.value.code == "SOMETHING_LIMITED"


def test_token_bucket_limit_skips_requests_without_an_identity():
    limit = TokenBucketLimit("test", burst=1, per_second=0.001, key=lambda request, view: None)

    for _ in range(5):
        limit.check(None, None)


def test_token_bucket_limit_reads_its_rate_from_a_setting(settings):
    settings.SVC_TEST_BUCKET = (1, 0.001)
    limit = TokenBucketLimit("test", setting="SVC_TEST_BUCKET", key=lambda request, view: "one")
    limit.check(None, None)

    with pytest.raises(RateLimited):
        limit.check(None, None)


def test_token_bucket_limit_fails_open_when_redis_is_down(redis_down):
    limit = _bucket(burst=1, fail_open=True)

    for _ in range(3):
        limit.check(None, None)


def test_token_bucket_limit_fails_closed_when_asked(redis_down):
    limit = _bucket(burst=1, fail_open=False)

    with pytest.raises(ServiceUnavailable) as caught:
        limit.check(None, None)

    assert caught.value.status_code == 503
    assert caught.value.code == "SERVICE_UNAVAILABLE"
    assert caught.value.headers() == {"Retry-After": "5"}


# --- MinuteWindowLimit ------------------------------------------------------------------------------------------


def _request(remote_addr: str | None):
    request = RequestFactory().post("/auth/sign-in/email")
    if remote_addr is None:
        del request.META["REMOTE_ADDR"]
    else:
        request.META["REMOTE_ADDR"] = remote_addr
    return request


@pytest.fixture
def frozen(time_machine):
    time_machine.move_to(datetime(2025, 3, 4, 10, 0, 30, tzinfo=UTC), tick=False)


def test_minute_window_refuses_the_call_after_the_rate(frozen):
    limit = MinuteWindowLimit("test.window", rate="2/m")
    request = _request("203.0.113.7")
    limit.check(request, None)
    limit.check(request, None)

    with pytest.raises(RateLimited) as caught:
        limit.check(request, None)

    assert 1 <= caught.value.retry_after <= 60
    assert caught.value.headers() == {"Retry-After": str(caught.value.retry_after)}


def test_minute_window_opens_again_after_the_window(time_machine):
    time_machine.move_to(datetime(2025, 3, 4, 10, 0, 30, tzinfo=UTC), tick=False)
    limit = MinuteWindowLimit("test.window", rate="1/m")
    request = _request("203.0.113.7")
    limit.check(request, None)
    with pytest.raises(RateLimited) as caught:
        limit.check(request, None)

    time_machine.shift(caught.value.retry_after)

    limit.check(request, None)


@pytest.mark.parametrize("remote_addr", [None, "", "unknown", "not-an-ip"])
def test_minute_window_never_limits_requests_without_a_client_address(frozen, remote_addr):
    limit = MinuteWindowLimit("test.window", rate="1/m")

    for _ in range(5):
        limit.check(_request(remote_addr), None)


def test_minute_window_is_per_address(frozen):
    limit = MinuteWindowLimit("test.window", rate="1/m")
    limit.check(_request("203.0.113.7"), None)

    limit.check(_request("203.0.113.8"), None)


def test_minute_window_is_per_group(frozen):
    limit = MinuteWindowLimit("test.window", rate="1/m")
    other = MinuteWindowLimit("test.other", rate="1/m")
    limit.check(_request("203.0.113.7"), None)

    other.check(_request("203.0.113.7"), None)


def test_ipv6_addresses_in_the_same_64_share_a_window(frozen):
    limit = MinuteWindowLimit("test.window", rate="2/m")
    limit.check(_request("2001:db8:1:2::1"), None)
    limit.check(_request("2001:db8:1:2:ffff:ffff:ffff:ffff"), None)

    with pytest.raises(RateLimited):
        limit.check(_request("2001:db8:1:2:abcd::42"), None)

    limit.check(_request("2001:db8:1:3::1"), None)  # another /64


def test_minute_window_fails_closed_without_redis(redis_down):
    limit = MinuteWindowLimit("test.window", rate="2/m")

    with pytest.raises(ServiceUnavailable) as caught:
        limit.check(_request("203.0.113.7"), None)

    assert caught.value.code == "SERVICE_UNAVAILABLE"
    assert caught.value.headers() == {"Retry-After": "5"}


def test_minute_window_can_fail_open_without_redis(redis_down):
    limit = MinuteWindowLimit("test.window", rate="1/m", fail_open=True)

    for _ in range(3):
        limit.check(_request("203.0.113.7"), None)


def test_sign_in_window_answers_429_with_retry_after_through_http(db, client, settings, frozen):
    settings.SVC_SIGN_IN_RATE = "2/m"
    body = {"email": "nobody@example.com", "password": "x"}

    statuses = [
        client.post("/auth/sign-in/email", body, content_type="application/json", REMOTE_ADDR="198.51.100.4")
        for _ in range(3)
    ]

    assert [r.status_code for r in statuses[:2]] == [InvalidCredentials.status_code] * 2
    refused = statuses[2]
    assert refused.status_code == 429
    retry_after = int(refused["Retry-After"])
    assert 1 <= retry_after <= 60
    assert refused.json() == {
        "code": "RATE_LIMITED",
        "message": "Too many requests; retry later.",
        "details": {"retryAfter": retry_after},
    }


# --- client_address_block ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("remote_addr", "kwargs", "expected"),
    [
        pytest.param("203.0.113.7", {}, "203.0.113.7/32", id="ipv4-default-32"),
        pytest.param(" 203.0.113.7 ", {}, "203.0.113.7/32", id="ipv4-padded"),
        pytest.param("203.0.113.7", {"ipv4_prefix": 24}, "203.0.113.0/24", id="ipv4-24"),
        pytest.param("2001:db8:1:2:3:4:5:6", {}, "2001:db8:1:2::/64", id="ipv6-64"),
        pytest.param("2001:DB8:1:2::9", {}, "2001:db8:1:2::/64", id="ipv6-uppercase"),
        pytest.param("2001:db8:1:2:3:4:5:6", {"ipv4_prefix": 24}, "2001:db8:1:2::/64", id="ipv6-ignores-ipv4-prefix"),
        pytest.param("::ffff:203.0.113.7", {}, "203.0.113.7/32", id="ipv4-mapped-ipv6-is-the-ipv4-client"),
        pytest.param("garbage", {}, None, id="garbage"),
        pytest.param("203.0.113.7, 10.0.0.1", {}, None, id="list"),
        pytest.param("203.0.113.256", {}, None, id="bad-octet"),
        pytest.param("", {}, None, id="empty"),
        pytest.param(None, {}, None, id="missing"),
    ],
)
def test_client_address_block(remote_addr, kwargs, expected):
    assert client_address_block(_request(remote_addr), **kwargs) == expected
