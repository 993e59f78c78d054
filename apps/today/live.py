"""Live updates: committed outbox events to the practice's open /today/ws sockets, through the channel layer.

Publishing: after each transaction that recorded events commits (apps.events.services.on_events_committed), the
committed rows are re-read (an event recorded in a savepoint that rolled back is not there) and sent, as webhook
envelopes, to one channel-layer group per practice. Nothing here can fail the commit: errors are logged and the
events stay in the outbox (clients catch up with GET /today on reconnect).

Pushing to members: push_to_users() (apps.today.public) sends a frame to each named member's own group after the
commit (notifications, team chat); every socket of that member on that practice receives it.

Receiving: apps.today.consumers admits a socket with `admit()` and, for each group message, re-reads the member's
access with `current_role()` and forwards the envelopes `may_receive()` allows.
"""

import json
import logging
from dataclasses import dataclass
from importlib import import_module
from itertools import groupby

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Count

from apps.accounts.models import Membership
from apps.accounts.roles import role_has_permission
from apps.accounts.selectors import resolve_organization
from apps.core.credentials import SESSION, Credential
from apps.core.errors import ApiError, RateLimited, ValidationFailed
from apps.core.limits import TokenBucketLimit
from apps.events.models import Event
from apps.events.services import envelope

logger = logging.getLogger("apps.today")

EVENTS_MESSAGE = "live.events"  # consumers' handler: live_events
RESYNC_MESSAGE = "live.resync"  # consumers' handler: live_resync
USER_MESSAGE = "live.user"  # consumers' handler: live_user (push_to_users: a frame for one member)
MAX_EVENTS_PER_COMMIT = 1000  # beyond this a commit sends one resync notice instead of its events
MAX_EVENTS_PER_MESSAGE = 100
MAX_MESSAGE_BYTES = 256 * 1024

# Event type prefix → the permission a role needs to receive it; anything else needs settings:read.
READ_PERMISSIONS = (
    ("patient.", "patient:read"),
    ("journey.", "journey:read"),
    ("task.", "task:read"),
    ("appointment.", "appointment:read"),
    # Those who work the inbox: analysts read inbox counts only, clinical roles see the PMS inbox later.
    ("conversation.", "inbox:work"),
    ("message.", "inbox:work"),
    ("deposit_request.", "deposit:read"),
    ("reputation_", "reputation:read"),
)
OTHER_EVENTS_PERMISSION = "settings:read"
# Frames for one member (their notifications, their team chat rooms) need only these: every role holds them, so
# clinical roles connect too and receive their own frames, though no practice event reaches them.
PERSONAL_PERMISSIONS = frozenset({"notification:use", "teamchat:use"})
LIVE_PERMISSIONS = (
    frozenset(permission for _, permission in READ_PERMISSIONS) | {OTHER_EVENTS_PERMISSION} | PERSONAL_PERMISSIONS
)

# Close codes. Before accept they refuse the handshake (an HTTP 403 through daphne); after, they end the socket.
BAD_REQUEST, UNAUTHENTICATED, FORBIDDEN, RATE_LIMITED = 4400, 4401, 4403, 4429

HANDSHAKE_LIMIT = TokenBucketLimit(
    "live-handshake", setting="SVC_LIVE_HANDSHAKE_BUCKET", key=lambda user, _view: f"user:{user.pk}"
)


def group_name(organization_id) -> str:
    return f"today.live.{organization_id}"


def user_group_name(organization_id, user_id) -> str:
    """One member's own group: every socket that member opened on that practice joins it."""
    return f"today.user.{organization_id}.{user_id}"


def read_permission(event_type: str) -> str:
    return next((p for prefix, p in READ_PERMISSIONS if event_type.startswith(prefix)), OTHER_EVENTS_PERMISSION)


def may_receive(role: str, event_type: str) -> bool:
    return role_has_permission(role, read_permission(event_type))


def may_connect(role: str) -> bool:
    return any(role_has_permission(role, permission) for permission in LIVE_PERMISSIONS)


# --- publishing -------------------------------------------------------------------------------------------------


def _chunks(envelopes: list[dict]):
    chunk, size = [], 0
    for item in envelopes:
        item_size = len(json.dumps(item, separators=(",", ":")))
        if chunk and (len(chunk) == MAX_EVENTS_PER_MESSAGE or size + item_size > MAX_MESSAGE_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += item_size
    if chunk:
        yield chunk


def committed_messages(event_ids) -> list[tuple[str, dict]]:
    """(group, message) pairs for the committed events among `event_ids`, each practice's to its own group."""
    ids = list(event_ids)
    if not ids:
        return []
    committed = Event.objects.unscoped().filter(id__in=ids)
    if len(ids) > MAX_EVENTS_PER_COMMIT:
        return [
            (
                group_name(row["organization_id"]),
                {"type": RESYNC_MESSAGE, "organization_id": str(row["organization_id"]), "count": row["count"]},
            )
            for row in committed.values("organization_id").annotate(count=Count("id")).order_by("organization_id")
        ]
    position = {event_id: index for index, event_id in enumerate(ids)}
    events = sorted(committed, key=lambda event: (str(event.organization_id), position[event.id]))
    messages = []
    for organization_id, practice_events in groupby(events, key=lambda event: str(event.organization_id)):
        for chunk in _chunks([envelope(event) for event in practice_events]):
            messages.append(
                (
                    group_name(organization_id),
                    {"type": EVENTS_MESSAGE, "organization_id": organization_id, "events": chunk},
                )
            )
    return messages


async def _send(layer, messages) -> None:
    for group, message in messages:
        await layer.group_send(group, message)


def publish_committed(event_ids) -> None:
    """The on_events_committed listener. Never raises: a commit that succeeded stays a success."""
    try:
        layer = get_channel_layer()
        messages = committed_messages(event_ids) if layer is not None else []
        if messages:
            async_to_sync(_send)(layer, messages)
    except Exception as exc:
        logger.warning("live updates not published (%s); clients catch up on reconnect", type(exc).__name__)


def push_to_users(organization_id, user_ids, kind: str, data: dict) -> None:
    """Send {"type": kind, "organizationId", "data": data} to the open sockets of these members of the practice,
    after the current transaction commits (at once outside one). A rollback sends nothing; a failure is logged and
    never undoes the commit. `data` goes out as given (camelCase keys, JSON values)."""
    organization_id = str(getattr(organization_id, "pk", organization_id))
    users = list(dict.fromkeys(str(getattr(user, "pk", user)) for user in user_ids))
    if not users:
        return

    def push() -> None:
        try:
            layer = get_channel_layer()
            if layer is None:
                return
            payload = json.loads(json.dumps(data, cls=DjangoJSONEncoder))
            messages = [
                (
                    user_group_name(organization_id, user_id),
                    {
                        "type": USER_MESSAGE,
                        "organization_id": organization_id,
                        "user_id": user_id,
                        "kind": kind,
                        "data": payload,
                    },
                )
                for user_id in users
            ]
            async_to_sync(_send)(layer, messages)
        except Exception as exc:
            logger.warning("live push %s not sent (%s); clients catch up on reconnect", kind, type(exc).__name__)

    transaction.on_commit(push, robust=True)


# --- admission and re-reads ---------------------------------------------------------------------------------------


class Refused(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Admission:
    user_id: object
    organization_id: str
    role: str
    session_key: str


def admit(*, user, session, organization_param: str | None) -> Admission:
    """Who may open the socket, mirroring the HTTP rules for a browser session: a signed-in active user, within the
    handshake bucket, with a membership chosen by ?organizationId= (else the session's active practice or the only
    one) whose role may read some event. Raises Refused with the close code."""
    if user is None or not user.is_authenticated or not user.is_active or not session.session_key:
        raise Refused(UNAUTHENTICATED)
    try:
        HANDSHAKE_LIMIT.check(user, None)
        choice = resolve_organization(
            user=user, credential=Credential(kind=SESSION), header=organization_param, session=session
        )
    except RateLimited:
        raise Refused(RATE_LIMITED) from None
    except ValidationFailed:
        raise Refused(BAD_REQUEST) from None
    except ApiError:
        raise Refused(FORBIDDEN) from None
    if choice.membership is None or not may_connect(choice.membership.role):
        raise Refused(FORBIDDEN)
    return Admission(
        user_id=user.pk,
        organization_id=str(choice.organization.id),
        role=choice.membership.role,
        session_key=session.session_key,
    )


def current_role(admission: Admission) -> str:
    """The member's role now (re-read for each delivery). Raises Refused when the session ended or no longer
    belongs to the user, or when the membership is gone or its role may read no event."""
    session = import_module(settings.SESSION_ENGINE).SessionStore(admission.session_key)
    if str(session.load().get(SESSION_KEY)) != str(admission.user_id):
        raise Refused(UNAUTHENTICATED)
    role = (
        Membership.objects.for_org(admission.organization_id)
        .filter(user_id=admission.user_id, user__is_active=True)
        .values_list("role", flat=True)
        .first()
    )
    if role is None or not may_connect(role):
        raise Refused(FORBIDDEN)
    return role
