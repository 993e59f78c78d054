"""Browser sessions as people see them (/user/sessions): recorded at sign-in, touched at most once a minute, ended
one by one or all but the current one.

The session key is a bearer secret: a UserSession keeps its SHA-256 (to find the row from a request) and its Fernet
encryption (apps.core.crypto, to delete the session from the session store when someone ends it), never the key.
A session lives SESSION_COOKIE_AGE from sign-in (an absolute expiry: activity does not extend it).
"""

import hashlib
import logging
from datetime import timedelta
from importlib import import_module

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from apps.accounts.models import User, UserSession
from apps.core import crypto
from apps.core.errors import NotFound

logger = logging.getLogger(__name__)

TOUCH_RESOLUTION = timedelta(minutes=1)
USER_AGENT_MAX = UserSession._meta.get_field("user_agent").max_length
# Seconds since the epoch of the last recorded touch, kept in the session itself so most requests skip the UPDATE.
_SEEN_KEY = "_svc_seen_at"
_DB_ENGINE = "django.contrib.sessions.backends.db"


def key_digest(session_key: str) -> str:
    return hashlib.sha256(session_key.encode()).hexdigest()


def _session_store():
    return import_module(settings.SESSION_ENGINE).SessionStore


def _client(django_request) -> tuple[str | None, str]:
    from ipaddress import ip_address

    raw = (django_request.META.get("REMOTE_ADDR") or "").strip()
    try:
        address = str(ip_address(raw))
    except ValueError:
        address = None
    agent = django_request.headers.get("User-Agent", "")
    return address, "".join(ch for ch in agent if ch.isprintable())[:USER_AGENT_MAX]


def record_sign_in(*, django_request, user: User) -> UserSession:
    """Call right after django.contrib.auth.login(): records the new session and fixes its absolute expiry."""
    session = django_request.session
    session.set_expiry(timezone.now() + timedelta(seconds=settings.SESSION_COOKIE_AGE))
    if session.session_key is None:
        session.save()
    now = timezone.now()
    session[_SEEN_KEY] = now.timestamp()
    address, agent = _client(django_request)
    record, _ = UserSession.objects.update_or_create(
        key_digest=key_digest(session.session_key),
        defaults={
            "user": user,
            "key_encrypted": crypto.encrypt(session.session_key),
            "ip_address": address,
            "user_agent": agent,
            "last_seen_at": now,
            "expires_at": session.get_expiry_date(),
        },
    )
    return record


def record_sign_out(*, django_request) -> None:
    """Call right before django.contrib.auth.logout(): the session leaves the list."""
    session_key = getattr(getattr(django_request, "session", None), "session_key", None)
    if session_key:
        UserSession.objects.filter(key_digest=key_digest(session_key)).delete()


def touch(*, django_request, user: User) -> None:
    """Move last_seen_at at most once a minute per session: one conditional UPDATE, and usually not even that.

    A signed-in session without a record (signed in before sessions were recorded) gets one here.
    """
    session = django_request.session
    now = timezone.now()
    seen = session.get(_SEEN_KEY)
    if isinstance(seen, (int, float)) and now.timestamp() - seen < TOUCH_RESOLUTION.total_seconds():
        return
    session_key = session.session_key
    if not session_key:
        return
    session[_SEEN_KEY] = now.timestamp()
    digest = key_digest(session_key)
    updated = UserSession.objects.filter(key_digest=digest, last_seen_at__lt=now - TOUCH_RESOLUTION).update(
        last_seen_at=now
    )
    if not updated and not UserSession.objects.filter(key_digest=digest).exists():
        if session.get("_session_expiry") is None:
            session.set_expiry(now + timedelta(seconds=settings.SESSION_COOKIE_AGE))
        address, agent = _client(django_request)
        UserSession.objects.get_or_create(
            key_digest=digest,
            defaults={
                "user": user,
                "key_encrypted": crypto.encrypt(session_key),
                "ip_address": address,
                "user_agent": agent,
                "last_seen_at": now,
                "expires_at": session.get_expiry_date(),
            },
        )


def current_digest(django_request) -> str | None:
    session_key = getattr(getattr(django_request, "session", None), "session_key", None)
    return key_digest(session_key) if session_key else None


def session_list(*, user: User) -> QuerySet[UserSession]:
    """The person's live sessions, newest first (expired ones are gone even before the hourly purge)."""
    return UserSession.objects.filter(user=user, expires_at__gt=timezone.now()).order_by("-created_at", "-id")


def _end_in_store(records: list[UserSession]) -> None:
    """Delete these sessions from the session store, so their cookies stop working at once."""
    keys = []
    for record in records:
        try:
            keys.append(crypto.decrypt(record.key_encrypted))
        except ValueError:
            logger.error("session record %s cannot be decrypted; its session ends at expiry", record.id)
    if not keys:
        return
    store = _session_store()
    if settings.SESSION_ENGINE == _DB_ENGINE:
        store.get_model_class().objects.filter(session_key__in=keys).delete()
        return
    for key in keys:
        store(session_key=key).delete(key)


@transaction.atomic
def session_end(*, user: User, session_id, current: str | None) -> bool:
    """End one of the person's sessions. Returns True when it was the calling one (the caller signs it out).
    Someone else's session id is indistinguishable from an unknown one."""
    record = session_list(user=user).select_for_update().filter(id=session_id).first()
    if record is None:
        raise NotFound("No such session.")
    if record.key_digest == current:
        return True
    _end_in_store([record])
    record.delete()
    return False


@transaction.atomic
def session_end_others(*, user: User, current: str | None) -> int:
    """End every session of the person but the calling one; returns how many ended."""
    records = list(UserSession.objects.select_for_update().filter(user=user).exclude(key_digest=current or ""))
    _end_in_store(records)
    UserSession.objects.filter(id__in=[r.id for r in records]).delete()
    return sum(1 for r in records if r.expires_at > timezone.now())


def purge_expired() -> int:
    deleted, _ = UserSession.objects.filter(expires_at__lt=timezone.now()).delete()
    return deleted
