"""Reads of the notifications area: always one member's own, in one practice."""

from django.db.models import QuerySet

from apps.notifications.models import Kind, Notification, Preference


def feed(*, organization, user, unread_only: bool = False) -> QuerySet:
    """The member's notifications, unordered (the cursor paginator orders them newest first)."""
    notifications = Notification.objects.for_org(organization).filter(user=user)
    if unread_only:
        notifications = notifications.filter(read_at__isnull=True)
    return notifications


def notification_get(*, organization, user, notification_id) -> Notification | None:
    """One of the member's notifications; another member's or another practice's is None (a 404)."""
    return Notification.objects.for_org(organization).filter(user=user, id=notification_id).first()


def unread_count(*, organization, user) -> int:
    return Notification.objects.for_org(organization).filter(user=user, read_at__isnull=True).count()


def preferences(*, organization, user) -> list[dict]:
    """Every kind with the member's switch (on unless they switched it off), in the kinds' order."""
    stored = dict(Preference.objects.for_org(organization).filter(user=user).values_list("kind", "in_app"))
    return [{"kind": kind, "label": label, "in_app": stored.get(kind, True)} for kind, label in Kind.choices]
