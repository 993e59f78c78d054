"""The shared inbox (tag "inbox"): conversations per patient and channel, their messages, assignment, status and
read marks. Working the inbox needs inbox:work (owner, manager, front desk, telesales); the unread counts need
conversation:read (analysts too). Message bodies are returned here and nowhere else (never in events or logs)."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.accounts.models import Membership
from apps.conversations import outbound, selectors, services
from apps.conversations.errors import SendRefused
from apps.conversations.models import Conversation, Kind, Message, MessageAttachment, Purpose
from apps.core.errors import NotFound, ValidationFailed
from apps.core.fields import TextField
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.serializers import StrictSerializer
from apps.core.views import BaseApiView

TAGS = ["inbox"]


class InboxPagination(NewestFirstCursorPagination):
    ordering = ("-last_message_at", "-id")


class MessagePagination(NewestFirstCursorPagination):
    ordering = ("-occurred_at", "-id")
    page_size = 50


class ConversationPatientSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()

    class Meta:
        ref_name = "ConversationPatient"


class ConversationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    patient = ConversationPatientSerializer()
    channel = serializers.ChoiceField(choices=Kind.choices)
    connection_id = serializers.UUIDField()
    contact_address = serializers.CharField(help_text="The patient's number or address on this channel.")
    status = serializers.ChoiceField(choices=Conversation.State.choices)
    snoozed_until = serializers.DateTimeField(allow_null=True)
    assignee_id = serializers.UUIDField(allow_null=True)
    unread = serializers.BooleanField(help_text="A message came in since you last read it.")
    last_message_at = serializers.DateTimeField()
    last_inbound_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Conversation"


class ConversationPageSerializer(serializers.Serializer):
    items = ConversationSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "ConversationPage"


class AttachmentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    content_type = serializers.CharField()
    state = serializers.ChoiceField(
        choices=MessageAttachment.State.choices,
        help_text="pending: being copied from the provider to the practice's storage; stored: downloadable; "
        "unavailable: the copy failed after every retry (the provider's copy has expired or is refused).",
    )
    size = serializers.IntegerField(allow_null=True, help_text="Bytes, once stored.")

    class Meta:
        ref_name = "MessageAttachment"


class MessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    conversation_id = serializers.UUIDField()
    direction = serializers.ChoiceField(choices=Message.Direction.choices)
    channel = serializers.ChoiceField(choices=Kind.choices)
    status = serializers.ChoiceField(choices=Message.State.choices)
    subject = serializers.CharField(help_text="E-mail only; empty otherwise.")
    body = serializers.CharField()
    attachments = AttachmentSerializer(many=True)
    occurred_at = serializers.DateTimeField()
    status_changed_at = serializers.DateTimeField(allow_null=True)
    error_code = serializers.CharField(
        allow_null=True,
        help_text="Why a message failed: one of the send rules' reasons (NO_ADDRESS, CONTACT_BLOCKED, "
        "ADDRESS_SUPPRESSED, OPTED_OUT, NO_CONSENT, CONNECTION_UNAVAILABLE, API_KEY_MISSING, PROVIDER_TIMEOUT, "
        "PROVIDER_UNREACHABLE …) or the provider's own error code; while a message is retried, the last error.",
    )
    purpose = serializers.CharField(allow_null=True, help_text="Outbound: service or marketing.")
    source = serializers.CharField(allow_null=True, help_text="Outbound: inbox, campaign, template or automation.")
    sent_by_id = serializers.UUIDField(allow_null=True, help_text="Outbound: the member who wrote it.")
    held_reason = serializers.CharField(
        allow_null=True,
        help_text="A queued message waiting: QUIET_HOURS (marketing, until the practice's quiet hours end) or "
        "RETRYING (the provider failed; the next attempt is at nextAttemptAt).",
    )
    next_attempt_at = serializers.DateTimeField(allow_null=True, help_text="Queued: when it is sent next.")
    sandbox = serializers.BooleanField(
        help_text="Sent through the sandbox transport (make run, tests): recorded, no provider saw it."
    )

    class Meta:
        ref_name = "Message"

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["error_code"] = instance.error_code or None
        for name in ("purpose", "source", "held_reason"):
            data[name] = getattr(instance, name) or None
        if instance.status != Message.State.QUEUED:
            data["next_attempt_at"] = None
        return data


class MessagePageSerializer(serializers.Serializer):
    items = MessageSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "MessagePage"


class ConversationListQuerySerializer(StrictSerializer):
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100)
    channel = serializers.ChoiceField(choices=Kind.choices, required=False)
    status = serializers.ChoiceField(choices=Conversation.State.choices, required=False)
    assignee = serializers.CharField(required=False, help_text="A member's user id, or none for unassigned.")
    unread = serializers.BooleanField(required=False)
    patient_id = serializers.UUIDField(required=False)

    def validate_assignee(self, value):
        if value == "none":
            return value
        try:
            return str(serializers.UUIDField().to_internal_value(value))
        except serializers.ValidationError:
            raise serializers.ValidationError("must be a user id or none") from None


class PageQuerySerializer(StrictSerializer):
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100)


class MessageBodySerializer(StrictSerializer):
    body = TextField(
        max_length=100_000,
        allow_blank=True,
        help_text="The text as sent: up to 1,600 characters by SMS and telephony texting, 4,096 on the messaging "
        "app, 100,000 by e-mail.",
    )
    subject = TextField(required=False, allow_blank=True, max_length=998, help_text="E-mail: required.")


class StartConversationSerializer(MessageBodySerializer):
    patient_id = serializers.UUIDField()
    connection_id = serializers.UUIDField(help_text="The channel connection to write from.")


class StartedSerializer(serializers.Serializer):
    conversation = ConversationSerializer()
    message = MessageSerializer()

    class Meta:
        ref_name = "ConversationStarted"


class AssignSerializer(StrictSerializer):
    assignee_id = serializers.UUIDField(allow_null=True, help_text="A member of the practice, or null to unassign.")


class SnoozeSerializer(StrictSerializer):
    until = serializers.DateTimeField()


class UnreadCountsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    by_channel = serializers.DictField(child=serializers.IntegerField())

    class Meta:
        ref_name = "InboxUnreadCounts"


class InboxView(BaseApiView):
    scope_area = "conversations"

    def conversation(self, id) -> Conversation:
        queryset = selectors.conversations_of(organization=self.organization, user=self.request.user)
        return self.get_tenant_object(Conversation, id, queryset=queryset)

    def send(self, data: dict, *, connection_id, patient_id, conversation: Conversation | None = None) -> Message:
        """Queue one service message written by the caller; a refusal is a 409 naming the reason."""
        [result] = outbound.queue_messages(
            organization=self.organization,
            connection_id=connection_id,
            messages=[
                outbound.OutboundMessage(patient_id=patient_id, body=data["body"], subject=data.get("subject", ""))
            ],
            purpose=Purpose.SERVICE,
            source="inbox",
            user=self.request.user,
            conversation=conversation,
        )
        if result.skipped_reason == outbound.PATIENT_NOT_FOUND:
            raise NotFound("No such patient.")
        if result.skipped_reason:
            raise SendRefused(result.skipped_reason)
        return selectors.message_get(organization=self.organization, message_id=result.message_id)

    def render(self, conversation: Conversation) -> Response:
        fresh = self.conversation(conversation.id)  # with `unread` for the caller
        return Response(ConversationSerializer(fresh).data)


class ConversationListView(InboxView):
    permission = "inbox:work"

    @extend_schema(
        tags=TAGS,
        operation_id="inbox_conversations_list",
        parameters=[ConversationListQuerySerializer],
        responses={200: ConversationPageSerializer},
        summary="The shared inbox: conversations, latest activity first",
        description="Permission inbox:work. Filters: channel, status (open, closed, snoozed), assignee (a user id "
        "or none), unread (for you), patientId. Cursor paging (cursor, limit ≤ 100).",
    )
    def get(self, request):
        query = self.parse_query(ConversationListQuerySerializer).validated_data
        conversations = selectors.conversations_of(organization=self.organization, user=request.user, filters=query)
        paginator = InboxPagination()
        page = paginator.paginate_queryset(conversations, request, view=self)
        return Response(paginator.get_paginated_response_data(ConversationSerializer(page, many=True).data))

    @extend_schema(
        tags=TAGS,
        operation_id="inbox_conversations_start",
        request=StartConversationSerializer,
        responses={201: StartedSerializer},
        summary="Write to a patient on a channel (opens their conversation there, or continues it)",
        description="Permission inbox:work. The message is stored queued and sent by a worker through the "
        "connection's provider; its status then moves queued → sent → delivered / read, or failed "
        "(message.sent, message.status_changed). It goes to the patient's current mobile number (in E.164, a "
        "national number read in the practice's country) or e-mail address. A service message: contact blocks "
        "(STOP) and e-mail suppressions apply, marketing consent does not. Refused with 409 and the reason as the "
        "code: NO_ADDRESS, CONTACT_BLOCKED, ADDRESS_SUPPRESSED, CONNECTION_UNAVAILABLE, OUTSIDE_CARE_WINDOW "
        "(messaging app: the patient has not written in the last 24 hours; send an approved template); 404 for "
        "another practice's patient or connection. The same rules are checked again just before the provider "
        "call: a contact who texts STOP in between makes the message fail with CONTACT_BLOCKED.",
    )
    def post(self, request):
        data = self.parse_body(StartConversationSerializer).validated_data
        if not selectors.connections_of(organization=self.organization).filter(id=data["connection_id"]).exists():
            raise NotFound("No such channel connection.")
        message = self.send(data, connection_id=data["connection_id"], patient_id=data["patient_id"])
        return Response(
            {
                "conversation": ConversationSerializer(self.conversation(message.conversation_id)).data,
                "message": MessageSerializer(message).data,
            },
            status=201,
        )


class ConversationView(InboxView):
    permission = "inbox:work"

    @extend_schema(
        tags=TAGS,
        operation_id="inbox_conversations_read",
        responses={200: ConversationSerializer},
        summary="One conversation",
        description="Permission inbox:work. Another practice's conversation answers 404.",
    )
    def get(self, request, id):
        return Response(ConversationSerializer(self.conversation(id)).data)


class MessageListView(InboxView):
    permission = "inbox:work"

    @extend_schema(
        tags=TAGS,
        operation_id="inbox_messages_list",
        parameters=[PageQuerySerializer],
        responses={200: MessagePageSerializer},
        summary="A conversation's messages, newest first",
        description="Permission inbox:work. Cursor paging (cursor, limit ≤ 100, 50 by default). Reading them does "
        "not mark the conversation read (POST …/read does).",
    )
    def get(self, request, id):
        self.parse_query(PageQuerySerializer)
        conversation = self.conversation(id)
        paginator = MessagePagination()
        page = paginator.paginate_queryset(
            selectors.messages_of(organization=self.organization, conversation=conversation), request, view=self
        )
        return Response(paginator.get_paginated_response_data(MessageSerializer(page, many=True).data))

    @extend_schema(
        tags=TAGS,
        operation_id="inbox_messages_send",
        request=MessageBodySerializer,
        responses={201: MessageSerializer},
        summary="Reply in a conversation",
        description="Permission inbox:work. Sent to the number or address the conversation uses, from its "
        "connection; stored queued and sent by a worker (see POST /conversations for the statuses, the rules and "
        "the 409 reasons). A reply is a service message: sent at once, quiet hours apply to marketing only.",
    )
    def post(self, request, id):
        conversation = self.conversation(id)
        data = self.parse_body(MessageBodySerializer).validated_data
        message = self.send(
            data,
            connection_id=conversation.connection_id,
            patient_id=conversation.patient_id,
            conversation=conversation,
        )
        return Response(MessageSerializer(message).data, status=201)


class AssignView(InboxView):
    permission = "inbox:work"

    @extend_schema(
        tags=TAGS,
        operation_id="inbox_conversations_assign",
        request=AssignSerializer,
        responses={200: ConversationSerializer},
        summary="Assign a conversation (or unassign it)",
        description="Permission inbox:work. The assignee must be a member of the practice (400 naming assigneeId).",
    )
    def post(self, request, id):
        conversation = self.conversation(id)
        assignee_id = self.parse_body(AssignSerializer).validated_data["assignee_id"]
        assignee = None
        if assignee_id is not None:
            membership = (
                Membership.objects.for_org(self.organization).filter(user_id=assignee_id).select_related("user").first()
            )
            if membership is None:
                raise ValidationFailed.for_field("assigneeId", "is not a member of this practice")
            assignee = membership.user
        services.conversation_assign(
            organization=self.organization, user=request.user, conversation=conversation, assignee=assignee
        )
        return self.render(conversation)


def _action_view(name: str, summary: str, description: str, act):
    """A POST /conversations/{id}/<name> without a body: `act(view, conversation)` changes it; the answer is the
    conversation as the caller now sees it."""

    class ActionView(InboxView):
        permission = "inbox:work"

        @extend_schema(
            tags=TAGS,
            operation_id=f"inbox_conversations_{name}",
            request=None,
            responses={200: ConversationSerializer},
            summary=summary,
            description=f"Permission inbox:work. {description}",
        )
        def post(self, request, id):
            conversation = self.conversation(id)
            act(self, conversation)
            return self.render(conversation)

    ActionView.__name__ = f"{name.title()}View"
    return ActionView


def _set_status(status: str):
    def act(view, conversation):
        services.conversation_set_status(
            organization=view.organization, user=view.request.user, conversation=conversation, status=status
        )

    return act


def _mark(read: bool):
    def act(view, conversation):
        services.conversation_mark(
            organization=view.organization, user=view.request.user, conversation=conversation, read=read
        )

    return act


CloseView = _action_view(
    "close", "Close a conversation", "A new inbound message reopens it.", _set_status(Conversation.State.CLOSED)
)
ReopenView = _action_view(
    "reopen",
    "Reopen a conversation",
    "Closed or snoozed conversations become open.",
    _set_status(Conversation.State.OPEN),
)
_PER_MEMBER = "Read marks are per member: the others' unread state is unchanged."
MarkReadView = _action_view("mark_read", "Mark a conversation read for you", _PER_MEMBER, _mark(True))
MarkUnreadView = _action_view("mark_unread", "Mark a conversation unread for you", _PER_MEMBER, _mark(False))


class SnoozeView(InboxView):
    permission = "inbox:work"

    @extend_schema(
        tags=TAGS,
        operation_id="inbox_conversations_snooze",
        request=SnoozeSerializer,
        responses={200: ConversationSerializer},
        summary="Snooze a conversation until a time",
        description="Permission inbox:work. until must be in the future; a new inbound message reopens it sooner.",
    )
    def post(self, request, id):
        conversation = self.conversation(id)
        until = self.parse_body(SnoozeSerializer).validated_data["until"]
        if until <= timezone.now():
            raise ValidationFailed.for_field("until", "must be in the future")
        services.conversation_set_status(
            organization=self.organization,
            user=request.user,
            conversation=conversation,
            status=Conversation.State.SNOOZED,
            snoozed_until=until,
        )
        return self.render(conversation)


class UnreadCountsView(InboxView):
    permission = "conversation:read"

    @extend_schema(
        tags=TAGS,
        operation_id="inbox_unread_counts",
        responses={200: UnreadCountsSerializer},
        summary="Your unread conversations, in all and by channel",
        description="Permission conversation:read (analysts too: counts only).",
    )
    def get(self, request):
        return Response(selectors.unread_counts(organization=self.organization, user=request.user))
