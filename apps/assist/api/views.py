"""AI assist routes (tag "inbox"): suggest a reply to a conversation, summarize it. Permission inbox:work.

Order of refusals: credential, scope and role (401/403) → another practice's or an unknown conversation (404) →
no provider configured (409 AI_ASSIST_NOT_CONFIGURED) → the practice's bucket (429 RATE_LIMITED, Retry-After) →
nothing to read (409 AI_ASSIST_NOTHING_TO_READ) → the provider failed (503 AI_ASSIST_UNAVAILABLE, Retry-After).
"""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.assist import provider, services
from apps.assist.api import serializers as s
from apps.assist.limits import ASSIST_LIMIT
from apps.conversations.public import conversation_get
from apps.core.errors import NotFound
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.views import BaseApiView

TAGS = ["inbox"]
REFUSALS = (
    "Another practice's or an unknown conversation answers 404. Off by default: without a configured provider the "
    "answer is 409 AI_ASSIST_NOT_CONFIGURED. Each call takes one token from the practice's AI assist bucket (60 "
    "burst, 6 per minute): when it is empty, 429 RATE_LIMITED with Retry-After. A conversation without message "
    "text is 409 AI_ASSIST_NOTHING_TO_READ; a provider that fails or times out is 503 AI_ASSIST_UNAVAILABLE with "
    "Retry-After. The provider sees the latest 30 message texts marked patient or practice, no names or contact "
    "details; nothing is stored or sent."
)


class AssistView(BaseApiView):
    permission = "inbox:work"
    scope_area = "conversations"
    renderer_classes = [CamelCaseJSONRenderer]
    error_statuses = ("409", "503")

    def prepare(self, request, id):
        """The conversation, once the provider is configured and the practice's bucket allows the call."""
        conversation = conversation_get(organization=self.organization, conversation_id=id)
        if conversation is None:
            raise NotFound("No such conversation.")
        provider.require_configuration()
        ASSIST_LIMIT.check(request, self)
        return conversation


class SuggestReplyView(AssistView):
    @extend_schema(
        tags=TAGS,
        operation_id="inbox_assist_suggest_reply",
        request=s.SuggestReplyRequestSerializer,
        responses={200: s.SuggestionSerializer},
        summary="AI assist: suggest a reply to a conversation",
        description=f"Permission inbox:work. The body is optional ({{}} or none; instructions up to 500 "
        f"characters). {REFUSALS}",
    )
    def post(self, request, id):
        instructions = ""
        if int(request.META.get("CONTENT_LENGTH") or 0):
            instructions = self.parse_body(s.SuggestReplyRequestSerializer).validated_data.get("instructions", "")
        conversation = self.prepare(request, id)
        result = services.suggest_reply(
            organization=self.organization, conversation=conversation, instructions=instructions
        )
        return Response({"suggestion": result.text, "messages_read": result.messages_read})


class SummarizeView(AssistView):
    @extend_schema(
        tags=TAGS,
        operation_id="inbox_assist_summarize",
        request=None,
        responses={200: s.SummarySerializer},
        summary="AI assist: summarize a conversation",
        description=f"Permission inbox:work. No body. {REFUSALS}",
    )
    def post(self, request, id):
        conversation = self.prepare(request, id)
        result = services.summarize(organization=self.organization, conversation=conversation)
        return Response({"summary": result.text, "messages_read": result.messages_read})
