"""Reads of support chat: a person sees their own thread only."""

from django.db.models import Q, QuerySet

from apps.support.models import SupportMessage, SupportThread


def thread_of(user) -> SupportThread | None:
    return SupportThread.objects.filter(user_id=user.pk).first()


def messages_of(user) -> QuerySet[SupportMessage]:
    """The person's messages and the staff's replies, unordered (the paginator orders them newest first)."""
    return SupportMessage.objects.filter(thread__user_id=user.pk).select_related("author")


def unread_reply_count(thread: SupportThread | None) -> int:
    if thread is None:
        return 0
    replies = SupportMessage.objects.filter(thread=thread, from_staff=True)
    if thread.user_read_at is not None:
        replies = replies.filter(Q(created_at__gt=thread.user_read_at))
    return replies.count()
