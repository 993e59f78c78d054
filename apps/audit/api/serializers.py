"""Wire shapes of the audit log and the retention list (camelCase on the wire; snake_case here)."""

from rest_framework import serializers

from apps.audit.models import AuditEntry
from apps.audit.selectors import AuditQuery
from apps.core.serializers import StrictSerializer

CREDENTIAL_KINDS = ("session", "api_key", "oauth")
METHODS = ("POST", "PUT", "PATCH", "DELETE")


class AuditFilterSerializer(StrictSerializer):
    """The filters of the list and the export. `from` and `to` are Python keywords: declared in get_fields."""

    user_id = serializers.UUIDField(required=False, help_text="The person who wrote.")
    source = serializers.ChoiceField(choices=AuditEntry.Source.values, required=False)
    credential_kind = serializers.ChoiceField(choices=CREDENTIAL_KINDS, required=False)
    subject_type = serializers.CharField(required=False, max_length=64, help_text="e.g. patient, note, recall_type.")
    subject_id = serializers.UUIDField(required=False, help_text="The subject's id (API and admin subjects).")
    action = serializers.CharField(required=False, max_length=64, help_text="create, update, delete, or a verb.")
    method = serializers.ChoiceField(choices=METHODS, required=False)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField(required=False, help_text="Entries at or after (ISO 8601).")
        fields["to"] = serializers.DateTimeField(required=False, help_text="Entries before (ISO 8601).")
        return fields

    def validate(self, attrs):
        start, end = attrs.get("from"), attrs.get("to")
        if start is not None and end is not None and end <= start:
            raise serializers.ValidationError({"to": ["must be after from"]})
        return attrs

    def to_query(self) -> AuditQuery:
        data = self.validated_data
        return AuditQuery(
            created_from=data.get("from"),
            created_to=data.get("to"),
            user_id=data.get("user_id"),
            source=data.get("source"),
            credential_kind=data.get("credential_kind"),
            subject_type=data.get("subject_type"),
            subject_id=str(data["subject_id"]) if data.get("subject_id") else None,
            action=data.get("action"),
            method=data.get("method"),
        )

    class Meta:
        ref_name = "AuditFilterQuery"


class AuditListQuerySerializer(AuditFilterSerializer):
    cursor = serializers.CharField(required=False, help_text="nextCursor of the previous page.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, help_text="Page size, 1 to 100.")

    class Meta:
        ref_name = "AuditListQuery"


class AuditEntrySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    source = serializers.ChoiceField(choices=AuditEntry.Source.values, help_text="api, admin, command or system.")
    user_id = serializers.UUIDField(allow_null=True, help_text="Null for an unattended command or system work.")
    credential_kind = serializers.CharField(help_text="session, api_key or oauth; empty for commands.")
    credential_id = serializers.CharField(help_text="The API key's id or the OAuth connection's id; else empty.")
    oauth_client_id = serializers.CharField(help_text="The OAuth client's client_id; else empty.")
    method = serializers.CharField(help_text="HTTP method; empty for commands.")
    route = serializers.CharField(help_text="The route pattern with {placeholders}, or the command's name.")
    action = serializers.CharField()
    subject_type = serializers.CharField()
    subject_id = serializers.CharField()
    fields = serializers.ListField(
        child=serializers.CharField(),
        help_text="Names of the fields sent or changed (or a command's options); never values.",
    )
    written = serializers.DictField(
        child=serializers.IntegerField(), help_text="A command's rows written per model (app.model → count)."
    )
    status_code = serializers.IntegerField(allow_null=True, help_text="HTTP status; a command's exit status (0, 1).")
    address_block = serializers.CharField(help_text="The caller's network (/24 IPv4, /48 IPv6), never the address.")

    class Meta:
        ref_name = "AuditEntry"


class AuditPageSerializer(serializers.Serializer):
    items = AuditEntrySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "AuditEntryPage"


class RetentionSerializer(serializers.Serializer):
    record = serializers.CharField(help_text="Stable key, e.g. audit_log, webhook_deliveries.")
    description = serializers.CharField()
    period = serializers.CharField(help_text="ISO 8601 duration, e.g. P2190D, PT48H.")
    period_days = serializers.FloatField(help_text="The period in days (fractions for hours).")
    counted_from = serializers.CharField()
    enforced_by = serializers.CharField(help_text="The scheduled task that deletes past the period.")
    source = serializers.CharField(help_text="The setting or constant the period is read from.")

    class Meta:
        ref_name = "RetentionPeriod"


class RetentionListSerializer(serializers.Serializer):
    items = RetentionSerializer(many=True)

    class Meta:
        ref_name = "RetentionPeriodList"
