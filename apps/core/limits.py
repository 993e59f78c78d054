"""Rate limits: a Redis token bucket (burst + refill, one Lua script on Redis TIME, atomic across processes) and
per-minute windows (django-ratelimit). Both refuse with 429 and an integer Retry-After.

Outage policy, per surface (documented in the README):
- credential buckets on the authenticated API fail open: the credential was already verified in PostgreSQL, and a
  Redis outage must not take the API down; the failure is logged.
- windows guarding credential guessing (sign-in, sign-up) fail closed with 503 SERVICE_UNAVAILABLE + Retry-After:
  without Redis we cannot bound password guessing, so we stop accepting guesses rather than lie with a 429.
"""

import ipaddress
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django_ratelimit.core import get_usage
from django_redis import get_redis_connection
from redis.exceptions import RedisError

from apps.core.errors import RateLimited, ServiceUnavailable

logger = logging.getLogger("apps.limits")

# take(key, capacity, rate, cost) -> {allowed, retry_ms}: the token bucket on Redis TIME, shared by the scripts below.
_TAKE_LUA = """
local function take(key, capacity, rate, cost)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local s = redis.call('HMGET', key, 'tokens', 'ts')
  local tokens, ts = tonumber(s[1]), tonumber(s[2])
  if tokens == nil then tokens = capacity; ts = now end
  tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate / 1000)
  local allowed, retry_ms = 0, 0
  if tokens >= cost then tokens = tokens - cost; allowed = 1
  else retry_ms = math.ceil((cost - tokens) * 1000 / rate) end
  redis.call('HSET', key, 'tokens', tostring(tokens), 'ts', now)
  redis.call('PEXPIRE', key, math.ceil(capacity * 1000 / rate) + 1000)
  return {allowed, retry_ms}
end
"""

_TOKEN_BUCKET_LUA = (
    _TAKE_LUA
    + """
return take(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
"""
)

# The bearer gate, the one round trip of a known bearer. KEYS[1] is its seen-bearer key, whose value is the bucket id
# of the credential it resolved to. Unseen: {0}. Seen: refresh its hour and, when ARGV[5] (cost) > 0, take from that
# bucket (ARGV[2] .. bucket id; burst ARGV[3], refill per second ARGV[4]): {1, bucket id, allowed, retry_ms}; with
# cost 0 (or the bare '1' that marked a seen bearer before bucket ids were kept): {1, bucket id, -1, 0}. The bucket
# key is derived from the value (one Redis server, not a cluster).
_BEARER_GATE_LUA = (
    _TAKE_LUA
    + """
local bucket = redis.call('GET', KEYS[1])
if not bucket then return {0} end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
if tonumber(ARGV[5]) <= 0 or bucket == '1' then return {1, bucket, -1, 0} end
local verdict = take(ARGV[2] .. bucket, tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
return {1, bucket, verdict[1], verdict[2]}
"""
)

# After a lookup that the gate did not cover (an unseen bearer): remember it for the hour with its bucket id
# (ARGV[2]) and, when ARGV[5] (cost) > 0, take from KEYS[2]. {allowed, retry_ms}, or {-1, 0} with cost 0.
_REMEMBER_TAKE_LUA = (
    _TAKE_LUA
    + """
redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[1]))
if tonumber(ARGV[5]) <= 0 then return {-1, 0} end
return take(KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
"""
)


_CLIENTS: dict[tuple, tuple] = {}


def _redis():
    """The default cache's Redis client, reused across requests. get_redis_connection builds a new client object
    for every request under ASGI (the cache handler is per request context): ~0.3 ms each, three times a request.
    The client is thread-safe and shares django-redis's connection pool; it is keyed on the cache's location and
    options, so a settings change (tests pointing Redis elsewhere) gets its own."""
    config = settings.CACHES["default"]
    key = (config.get("LOCATION"), repr(config.get("OPTIONS")))
    found = _CLIENTS.get(key)
    if found is None:
        client = get_redis_connection("default")
        found = _CLIENTS[key] = (
            client,
            client.register_script(_TOKEN_BUCKET_LUA),
            client.register_script(_BEARER_GATE_LUA),
            client.register_script(_REMEMBER_TAKE_LUA),
        )
    return found


def _bucket_script():
    return _redis()[1]


def take_token(key: str, *, burst: int, per_second: float, cost: int = 1) -> tuple[bool, int]:
    """Take `cost` tokens from bucket `key`. Returns (allowed, retry_after_seconds). Raises RedisError."""
    allowed, retry_ms = _bucket_script()(keys=[f"svc:tb:{key}"], args=[burst, per_second, cost])
    return bool(allowed), max(1, math.ceil(int(retry_ms) / 1000)) if not allowed else 0


def client_address_block(request, *, ipv4_prefix: int = 32, ipv6_prefix: int = 64) -> str | None:
    """The client address as a network (IPv4 address or block; IPv6 /64). None when there is no usable one."""
    raw = (request.META.get("REMOTE_ADDR") or "").strip()
    try:
        address = ipaddress.ip_address(raw)
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # a dual-stack socket's view of an IPv4 client
    prefix = ipv4_prefix if address.version == 4 else ipv6_prefix
    return str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))


class TokenBucketLimit:
    """Declared on a view (`rate_limits = [...]`): one bucket per key the key function returns."""

    def __init__(
        self,
        name: str,
        *,
        burst: int | None = None,
        per_second: float | None = None,
        setting: str | None = None,
        key: Callable[[object, object], str | None],
        fail_open: bool = True,
        code: str | None = None,
    ):
        self.name, self._burst, self._per_second, self.setting, self.key = name, burst, per_second, setting, key
        self.fail_open, self.code = fail_open, code

    @property
    def rate(self) -> tuple[int, float]:
        """(burst, refill per second), from the named setting when one is given (so it can be tuned live)."""
        if self.setting:
            burst, per_second = getattr(settings, self.setting)
            return int(burst), float(per_second)
        return int(self._burst), float(self._per_second)

    def check(self, request, view) -> None:
        identity = self.key(request, view)
        if identity is None:
            return
        try:
            burst, per_second = self.rate
            allowed, retry_after = take_token(f"{self.name}:{identity}", burst=burst, per_second=per_second)
        except RedisError as exc:
            logger.warning(
                "rate limit %s unavailable (%s); failing %s",
                self.name,
                type(exc).__name__,
                "open" if self.fail_open else "closed",
            )
            if self.fail_open:
                return
            raise ServiceUnavailable("Rate limiting is unavailable; retry shortly.") from None
        if not allowed:
            raise RateLimited(retry_after, code=self.code)


class MinuteWindowLimit:
    """A fixed window from django-ratelimit (e.g. "20/m"), keyed on the client address by default."""

    def __init__(self, group: str, *, rate: str | Callable[[], str], fail_open: bool = False):
        self.group, self.rate, self.fail_open = group, rate, fail_open

    def check(self, request, view) -> None:
        block = client_address_block(request)
        if block is None:
            return
        rate = self.rate() if callable(self.rate) else self.rate
        try:
            usage = get_usage(
                request._request if hasattr(request, "_request") else request,
                group=self.group,
                key=lambda group, req: block,
                rate=rate,
                increment=True,
            )
        except (RedisError, ConnectionError) as exc:
            usage = None
            logger.warning("rate window %s unavailable (%s)", self.group, type(exc).__name__)
            if self.fail_open:
                return
        if usage is None or usage["time_left"] < 0:  # django-ratelimit's signal that the cache failed
            if self.fail_open:
                return
            raise ServiceUnavailable("Sign-in protection is unavailable; retry shortly.")
        if usage["should_limit"]:
            # The window is still shut during its last second, so a client waiting Retry-After must get past it.
            raise RateLimited(usage["time_left"] + 1)


def credential_bucket(request, view) -> str | None:
    credential = getattr(request, "auth", None)
    return getattr(credential, "bucket_id", None)


@dataclass(frozen=True)
class BucketVerdict:
    """A credential bucket's answer taken during authentication (the bearer gate), applied by API_CREDENTIAL_LIMIT
    where the bucket is checked, so the order of answers (401, then 429, then 403) is unchanged. `allowed` with no
    token taken stands for a Redis outage: credential buckets fail open (logged when it happened)."""

    allowed: bool
    retry_after: int = 0


class CredentialBucketLimit(TokenBucketLimit):
    """The per-credential bucket (API keys, OAuth connections). A bearer authenticated over HTTP has already drawn
    from it in the bearer gate's round trip and carries the verdict; any other credential (the MCP server's tool
    calls) draws here."""

    def check(self, request, view) -> None:
        verdict = getattr(getattr(request, "auth", None), "bucket_verdict", None)
        if verdict is None:
            return super().check(request, view)
        if not verdict.allowed:
            raise RateLimited(verdict.retry_after, code=self.code)


API_CREDENTIAL_LIMIT = CredentialBucketLimit("credential", setting="SVC_API_KEY_BUCKET", key=credential_bucket)
_CREDENTIAL_BUCKET_PREFIX = f"svc:tb:{API_CREDENTIAL_LIMIT.name}:"


# --- unseen bearers (spec "Limits": a bearer not resolved at the edge within the hour passes the address-block
# screen before its lookup) ---------------------------------------------------------------------------------------

SEEN_BEARER_TTL = 3600


def _seen_key(digest: str) -> str:
    return f"svc:seen-bearer:{digest}"


def _retry_seconds(retry_ms) -> int:
    return max(1, math.ceil(int(retry_ms) / 1000))


class BearerGate:
    """One bearer's pass through Redis for one request: one round trip for a bearer resolved within the hour.

    `bearer_gate()` runs before the database lookup. The seen-bearer key holds the bucket id of the credential the
    bearer resolved to, so for a known bearer one script both confirms it was seen, refreshes its hour and (when
    `take` is set) takes the credential bucket's token; an unseen one passes the address-block window first. After
    the lookup, `resolved(bucket_id)` gives the bucket verdict for the credential (no Redis when the gate already
    took it; otherwise one script remembers the bearer and takes the token), and `forget()` drops a bearer the
    database refused (revoked, expired) so it is not "seen" any longer."""

    def __init__(self, digest: str, *, take: bool):
        self.digest, self.take = digest, take
        self.seen = False
        self.recorded_bucket: str | None = None
        self.verdict: BucketVerdict | None = None
        self.redis_failed = False

    def _cost(self) -> int:
        return 1 if self.take else 0

    def _rate_args(self) -> list:
        burst, per_second = API_CREDENTIAL_LIMIT.rate
        return [SEEN_BEARER_TTL, _CREDENTIAL_BUCKET_PREFIX, burst, per_second, self._cost()]

    def open(self) -> None:
        try:
            answer = _redis()[2](keys=[_seen_key(self.digest)], args=self._rate_args())
        except RedisError as exc:
            # Fail open: the seen check is skipped and the bucket passes; the credential is still verified.
            logger.warning("seen-bearer check unavailable (%s); failing open", type(exc).__name__)
            self.redis_failed = True
            return
        if not int(answer[0]):
            return
        self.seen = True
        recorded = answer[1]
        self.recorded_bucket = recorded.decode() if isinstance(recorded, bytes) else str(recorded)
        allowed = int(answer[2])
        if allowed >= 0:
            self.verdict = BucketVerdict(True) if allowed else BucketVerdict(False, _retry_seconds(answer[3]))

    def resolved(self, bucket_id: str) -> BucketVerdict | None:
        """The bucket verdict for the credential the bearer resolved to (None when the gate takes none)."""
        if self.redis_failed:
            logger.warning("rate limit %s unavailable; failing open", API_CREDENTIAL_LIMIT.name)
            return BucketVerdict(True) if self.take else None
        if self.seen and self.recorded_bucket == bucket_id:
            return self.verdict
        try:
            allowed, retry_ms = _redis()[3](
                keys=[_seen_key(self.digest), _CREDENTIAL_BUCKET_PREFIX + bucket_id],
                args=[SEEN_BEARER_TTL, bucket_id, *self._rate_args()[2:]],
            )
        except RedisError as exc:
            logger.warning("seen-bearer record and rate limit unavailable (%s); failing open", type(exc).__name__)
            return BucketVerdict(True) if self.take else None
        if int(allowed) < 0:
            return None
        return BucketVerdict(True) if int(allowed) else BucketVerdict(False, _retry_seconds(retry_ms))

    def forget(self) -> None:
        if not self.seen:
            return
        try:
            _redis()[0].delete(_seen_key(self.digest))
        except RedisError as exc:
            logger.warning("seen-bearer removal unavailable (%s)", type(exc).__name__)


def bearer_gate(request, digest: str, *, take: bool = True) -> BearerGate:
    """Before looking a bearer up in the database: one resolved within the hour passes (and, with `take`, draws from
    its credential bucket in the same round trip); any other draws from the 300-per-minute window of its address
    block (IPv4 /24, IPv6 /64), so guessing cannot flood the lookups (429). Requests without a client address pass;
    a Redis outage fails open (the credential is still verified in PostgreSQL)."""
    gate = BearerGate(digest, take=take)
    gate.open()
    if not gate.seen and not gate.redis_failed:
        UNSEEN_BEARER_LIMIT.check(request, None)
    return gate


class AddressBlockWindow(MinuteWindowLimit):
    """A per-minute window keyed on the client's address block (IPv4 /24, IPv6 /64)."""

    def check(self, request, view) -> None:
        django_request = request._request if hasattr(request, "_request") else request
        block = client_address_block(django_request, ipv4_prefix=24, ipv6_prefix=64)
        if block is None:
            return
        rate = self.rate() if callable(self.rate) else self.rate
        try:
            usage = get_usage(django_request, group=self.group, key=lambda group, req: block, rate=rate, increment=True)
        except (RedisError, ConnectionError) as exc:
            logger.warning("rate window %s unavailable (%s); failing open", self.group, type(exc).__name__)
            return
        if usage is not None and usage["time_left"] >= 0 and usage["should_limit"]:
            raise RateLimited(usage["time_left"] + 1)


UNSEEN_BEARER_LIMIT = AddressBlockWindow("auth.unseen-bearer", rate=lambda: settings.SVC_UNSEEN_BEARER_RATE)
