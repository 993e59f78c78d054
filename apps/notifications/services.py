"""Writes of the notifications area: storing notifications (honouring each member's switches, once per dedupe key),
read marks, and preferences. Each change is pushed to the member's open /today/ws sockets after the commit
(apps.today.public.push_to_users):

- notification.created  {"notification": {...}, "unreadCount": n}
- notification.read_state  {"ids": [...] or null for all, "read": bool, "unreadCount": n}
"""

import re
import uuid

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from apps.accounts.models import Membership
from apps.notifications.models import Kind, Notification, Preference
from apps.notifications.renderers import notification_frame
from apps.today.public import push_to_users

MAX_TITLE = 120
CREATED = "notification.created"
READ_STATE = "notification.read_state"

_SPACES = re.compile(r"\s+")


def short_title(title: str, limit: int = MAX_TITLE) -> str:
    """One line, at most `limit` characters (an ellipsis marks a cut)."""
    title = _SPACES.sub(" ", str(title)).strip()
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"


def _organization_id(organization):
    return getattr(organization, "pk", organization)


def unread_counts(*, organization, user_ids) -> dict[str, int]:
    rows = (
        Notification.objects.for_org(organization)
        .filter(user_id__in=list(user_ids), read_at__isnull=True)
        .values("user_id")
        .annotate(count=Count("id"))
        .order_by()
    )
    counts = {str(user_id): 0 for user_id in user_ids}
    counts.update({str(row["user_id"]): row["count"] for row in rows})
    return counts


def enabled_recipients(*, organization, user_ids, kind: str) -> list:
    """Of these users, the active members of the practice who have not switched this kind off, in the given order."""
    wanted = list(dict.fromkeys(uuid.UUID(str(getattr(user, "pk", user))) for user in user_ids))
    if not wanted:
        return []
    members = set(
        Membership.objects.for_org(organization)
        .filter(user_id__in=wanted, user__is_active=True)
        .values_list("user_id", flat=True)
    )
    switched_off = set(
        Preference.objects.for_org(organization)
        .filter(user_id__in=members, kind=kind, in_app=False)
        .values_list("user_id", flat=True)
    )
    return [user_id for user_id in wanted if user_id in members and user_id not in switched_off]


@transaction.atomic
def notify(
    *,
    organization,
    user_ids,
    kind: str,
    title: str,
    subject_type: str,
    subject_id,
    data: dict | None = None,
    patient_id=None,
    dedupe_key: str | None = None,
) -> list[Notification]:
    """Store one notification per member named (members of the practice only, each unless they switched `kind`
    off), then push notification.created to each after the commit. With `dedupe_key`, a member who already has a
    notification with that key gets nothing new. Returns the notifications stored."""
    if kind not in Kind.values:
        raise ValueError(f"{kind!r} is not a notification kind")
    organization_id = _organization_id(organization)
    recipients = enabled_recipients(organization=organization_id, user_ids=user_ids, kind=kind)
    if dedupe_key is not None and recipients:
        told = set(
            Notification.objects.for_org(organization_id)
            .filter(user_id__in=recipients, dedupe_key=dedupe_key)
            .values_list("user_id", flat=True)
        )
        recipients = [user_id for user_id in recipients if user_id not in told]
    if not recipients:
        return []
    now = timezone.now()
    rows = [
        Notification(
            id=uuid.uuid4(),
            organization_id=organization_id,
            user_id=user_id,
            kind=kind,
            title=short_title(title),
            subject_type=subject_type,
            subject_id=str(subject_id),
            data=dict(data or {}),
            patient_id=patient_id,
            dedupe_key=dedupe_key,
            created_at=now,
            updated_at=now,
        )
        for user_id in recipients
    ]
    # A concurrent producer with the same key wins quietly: keep only the rows this insert really wrote.
    Notification.objects.bulk_create(rows, ignore_conflicts=dedupe_key is not None)
    if dedupe_key is not None:
        written = set(
            Notification.objects.for_org(organization_id)
            .filter(id__in=[row.id for row in rows])
            .values_list("id", flat=True)
        )
        rows = [row for row in rows if row.id in written]
    counts = unread_counts(organization=organization_id, user_ids=[row.user_id for row in rows])
    for row in rows:
        push_to_users(
            organization_id,
            [row.user_id],
            CREATED,
            {"notification": notification_frame(row), "unreadCount": counts[str(row.user_id)]},
        )
    return rows


def _push_read_state(organization, user, ids, read: bool) -> None:
    count = unread_counts(organization=organization, user_ids=[user.pk])[str(user.pk)]
    push_to_users(
        _organization_id(organization),
        [user.pk],
        READ_STATE,
        {"ids": None if ids is None else [str(i) for i in ids], "read": read, "unreadCount": count},
    )


@transaction.atomic
def notification_mark(*, organization, user, notification: Notification, read: bool) -> Notification:
    """Read (keeps the first read time) or unread again. A change is pushed to the member's other sockets."""
    if (notification.read_at is not None) != read:
        notification.read_at = timezone.now() if read else None
        notification.save(update_fields=["read_at", "updated_at"])
        _push_read_state(organization, user, [notification.id], read)
    return notification


@transaction.atomic
def notifications_mark_all_read(*, organization, user) -> int:
    """Every unread notification of the member in this practice is read now. Returns how many changed."""
    now = timezone.now()
    changed = (
        Notification.objects.for_org(organization)
        .filter(user=user, read_at__isnull=True)
        .update(read_at=now, updated_at=now)
    )
    if changed:
        _push_read_state(organization, user, None, True)
    return changed


@transaction.atomic
def preferences_set(*, organization, user, changes: dict[str, bool]) -> None:
    """Switch kinds on or off for the member in this practice; kinds not named keep their setting. Existing
    notifications stay; the switch applies to the ones that come after."""
    for kind, in_app in changes.items():
        Preference.objects.for_org(organization).update_or_create(
            organization_id=_organization_id(organization), user=user, kind=kind, defaults={"in_app": in_app}
        )
