"""How support chat reads on the wire (the routes and the live push of a staff reply)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.renderers import camelize

STAFF_NAME = "Support team"


class SupportMessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    from_staff = serializers.BooleanField(help_text="A reply from the platform's support staff.")
    author_name = serializers.SerializerMethodField(help_text="Your name, or the support staff member's.")
    body = serializers.CharField()
    organization_id = serializers.UUIDField(
        allow_null=True, help_text="The practice you were acting in when you wrote (null: none chosen)."
    )
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "SupportMessage"

    @extend_schema_field(serializers.CharField())
    def get_author_name(self, message) -> str:
        author = message.author
        if message.from_staff:
            return (author.name if author is not None else "") or STAFF_NAME
        return (author.name or author.email) if author is not None else ""


def support_message_data(message) -> dict:
    return camelize(SupportMessageSerializer(message).data)
