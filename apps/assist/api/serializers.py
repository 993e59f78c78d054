"""Wire shapes of AI assist (camelCase on the wire)."""

from rest_framework import serializers

from apps.assist.services import MAX_INSTRUCTIONS
from apps.core.fields import TextField
from apps.core.serializers import StrictSerializer


class SuggestReplyRequestSerializer(StrictSerializer):
    instructions = TextField(
        required=False,
        allow_blank=True,
        max_length=MAX_INSTRUCTIONS,
        help_text='Optional guidance for this reply ("confirm Tuesday, more formal").',
    )

    class Meta:
        ref_name = "AssistSuggestReplyRequest"


class SuggestionSerializer(serializers.Serializer):
    suggestion = serializers.CharField(help_text="A reply you may edit and send; nothing was sent or stored.")
    messages_read = serializers.IntegerField(help_text="How many of the latest messages it was based on.")

    class Meta:
        ref_name = "AssistSuggestion"


class SummarySerializer(serializers.Serializer):
    summary = serializers.CharField(help_text="A few short bullet points; nothing was stored.")
    messages_read = serializers.IntegerField(help_text="How many of the latest messages it was based on.")

    class Meta:
        ref_name = "AssistSummary"
