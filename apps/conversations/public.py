"""The conversations app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use: queueing outbound messages through the send pipeline (`queue_messages` with
`OutboundMessage`, one result per message: queued or skipped with a reason), checking one message first
(`validate_outbound`, `BODY_LIMITS`, `MAX_HTML`), a sample to a member's own address (`send_test_message`),
the chat widget's part (its connection, a visitor's message received or already stored, the delivery of replies
to visitors: `widget_channel_create`, `widget_message_received`, `widget_message_stored`,
`widget_messages_stored`, `on_widget_message`),
withdrawing queued messages (`withdraw_queued`: a cancelled campaign's), the models they point at and query (a
campaign recipient keeps its Message; audiences leave out blocked contacts), the channel kinds and the rules'
channel maps, the conversation and message readers for one practice, and a patient's address on a channel.
"""

from django.db.models import Exists

from apps.conversations.inbound import widget_message_received, widget_message_stored, widget_messages_stored
from apps.conversations.models import (
    ChannelConnection,
    ContactBlock,
    Conversation,
    Kind,
    Message,
    MessagingSettings,
    Purpose,
    Status,
)
from apps.conversations.outbound import (
    ADDRESS_SUPPRESSED,
    BLOCK_CHANNEL,
    BODY_LIMITS,
    CONNECTION_UNAVAILABLE,
    CONSENT_CHANNEL,
    CONTACT_BLOCKED,
    MAX_HTML,
    NO_ADDRESS,
    NO_CONSENT,
    OPTED_OUT,
    OUTSIDE_CARE_WINDOW,
    PATIENT_INACTIVE,
    PATIENT_NOT_FOUND,
    OutboundMessage,
    QueueResult,
    patient_address,
    practice_region,
    queue_messages,
    quiet_hours_end,
    send_test_message,
    validate_outbound,
    withdraw_queued,
)
from apps.conversations.reporting import message_outcomes
from apps.conversations.selectors import connections_of, conversation_get, messages_of
from apps.conversations.senders import Envelope, on_widget_message
from apps.conversations.services import on_template_status, widget_channel_create, widget_channel_sync
from apps.conversations.tasks import PARKED_KEPT_DAYS, RECEIPTS_KEPT_HOURS  # apps.audit: retention
from apps.conversations.transfer import conversations_export


def email_channel_active(organization) -> Exists:
    """As an expression (the setup status's emailDomains, GET /bootstrap): the practice has an e-mail channel
    connection that is active, i.e. its sending domain's provider has delivered a verified callback to it (pending
    and failing connections do not count)."""
    return Exists(ChannelConnection.objects.for_org(organization).filter(kind=Kind.EMAIL, status=Status.ACTIVE))


__all__ = [
    "ADDRESS_SUPPRESSED",
    "BLOCK_CHANNEL",
    "BODY_LIMITS",
    "CONNECTION_UNAVAILABLE",
    "CONSENT_CHANNEL",
    "CONTACT_BLOCKED",
    "MAX_HTML",
    "NO_ADDRESS",
    "NO_CONSENT",
    "OPTED_OUT",
    "OUTSIDE_CARE_WINDOW",
    "PARKED_KEPT_DAYS",
    "PATIENT_INACTIVE",
    "PATIENT_NOT_FOUND",
    "RECEIPTS_KEPT_HOURS",
    "ChannelConnection",
    "ContactBlock",
    "Conversation",
    "Envelope",
    "Kind",
    "Message",
    "MessagingSettings",
    "OutboundMessage",
    "Purpose",
    "QueueResult",
    "connections_of",
    "conversation_get",
    "conversations_export",
    "email_channel_active",
    "message_outcomes",
    "messages_of",
    "on_template_status",
    "on_widget_message",
    "patient_address",
    "practice_region",
    "queue_messages",
    "quiet_hours_end",
    "send_test_message",
    "validate_outbound",
    "widget_channel_create",
    "widget_channel_sync",
    "widget_message_received",
    "widget_message_stored",
    "widget_messages_stored",
    "withdraw_queued",
]
