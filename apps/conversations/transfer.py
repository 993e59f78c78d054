"""The practice's conversations as export rows (apps.transfer's data export and the practice archive): metadata
only — channel, state, times, the patient and assignee ids — never a message body."""

from apps.conversations.models import Conversation

CONVERSATION_EXPORT_COLUMNS = {  # CSV header → value path
    "id": "id",
    "patientId": "patient_id",
    "channel": "channel",
    "contactAddress": "contact_address",
    "status": "status",
    "assigneeId": "assignee_id",
    "lastMessageAt": "last_message_at",
    "lastInboundAt": "last_inbound_at",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
}


def conversations_export(*, organization):
    """(header, rows): a values_list queryset in a stable order, to be read through a server-side cursor."""
    rows = (
        Conversation.objects.for_org(organization)
        .order_by("created_at", "id")
        .values_list(*CONVERSATION_EXPORT_COLUMNS.values())
    )
    return list(CONVERSATION_EXPORT_COLUMNS), rows
