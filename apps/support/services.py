"""Writes of support chat: the person writes (POST /support/messages), staff reply from the back office
(apps.support.admin). A staff reply also reaches the person's open /today/ws sockets on the practice the thread was
last written from (kind support.reply), after the commit."""

from django.db import transaction
from django.utils import timezone

from apps.support.models import SupportMessage, SupportThread
from apps.support.renderers import support_message_data
from apps.today.public import push_to_users

REPLY_PUSH = "support.reply"


@transaction.atomic
def support_message_post(*, user, organization, body: str) -> SupportMessage:
    """The person's message; their thread is created with the first one. `organization`: the practice they are
    acting in (None when they have none, or several and chose none), kept on the message and the thread."""
    thread, _ = SupportThread.objects.select_for_update().get_or_create(user=user)
    message = SupportMessage.objects.create(thread=thread, author=user, body=body, organization=organization)
    thread.organization = organization if organization is not None else thread.organization
    thread.last_message_at = message.created_at
    thread.awaiting_reply = True
    thread.user_read_at = message.created_at  # writing reads what came before
    thread.save(update_fields=["organization", "last_message_at", "awaiting_reply", "user_read_at", "updated_at"])
    return message


@transaction.atomic
def support_reply(*, thread: SupportThread, staff, body: str) -> SupportMessage:
    """A staff member's reply (back office): visible to the person at once."""
    thread = SupportThread.objects.select_for_update().get(pk=thread.pk)
    message = SupportMessage.objects.create(
        thread=thread, author=staff, from_staff=True, body=body, organization_id=thread.organization_id
    )
    thread.last_message_at = message.created_at
    thread.awaiting_reply = False
    thread.save(update_fields=["last_message_at", "awaiting_reply", "updated_at"])
    if thread.organization_id is not None:
        push_to_users(thread.organization_id, [thread.user_id], REPLY_PUSH, {"message": support_message_data(message)})
    return message


@transaction.atomic
def support_mark_read(*, user) -> SupportThread | None:
    thread = SupportThread.objects.select_for_update().filter(user_id=user.pk).first()
    if thread is not None:
        thread.user_read_at = timezone.now()
        thread.save(update_fields=["user_read_at", "updated_at"])
    return thread
