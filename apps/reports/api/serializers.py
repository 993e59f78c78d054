"""Wire shapes of reports and report subscriptions (camelCase on the wire; snake_case here)."""

from rest_framework import serializers

from apps.core.fields import ClockTimeField, StrictBooleanField
from apps.core.naming import to_camel
from apps.core.serializers import NonEmptyPatchSerializer, StrictSerializer
from apps.reports.catalogue import REPORTS
from apps.reports.models import Frequency

# --- reports ----------------------------------------------------------------------------------------------------------


class ReportFilterSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The query parameter (camelCase).")
    type = serializers.ChoiceField(choices=("uuid", "choice"))
    description = serializers.CharField()
    choices = serializers.ListField(child=serializers.CharField(), required=False)

    class Meta:
        ref_name = "ReportFilter"


class ReportDescriptionSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    filters = ReportFilterSerializer(many=True)
    columns = serializers.ListField(child=serializers.CharField(), help_text="The rows' columns, as in the CSV.")

    class Meta:
        ref_name = "ReportDescription"


class ReportCatalogueSerializer(serializers.Serializer):
    items = ReportDescriptionSerializer(many=True)

    class Meta:
        ref_name = "ReportCatalogue"


class ReportAnswerSerializer(serializers.Serializer):
    """Documentation only: the view answers the selector's dict as it is."""

    key = serializers.CharField()
    title = serializers.CharField()
    date_from = serializers.DateField(help_text="The range's first day (practice time); on the wire `from`.")
    date_to = serializers.DateField(help_text="The range's last day, inclusive; on the wire `to`.")
    timezone = serializers.CharField(help_text="The practice's IANA time zone the days are reckoned in.")
    filters = serializers.DictField(help_text="The filters applied (query parameter → value).")
    columns = serializers.ListField(child=serializers.CharField())
    figures = serializers.DictField(help_text="The headline numbers (see the report's description).")
    rows = serializers.ListField(child=serializers.DictField(), help_text="The table, one object per row.")
    generated_at = serializers.DateTimeField(help_text="When the figures were computed.")
    cached = serializers.BooleanField(help_text="true: served from the cache (up to 5 minutes old).")

    class Meta:
        ref_name = "ReportAnswer"


# --- subscriptions ----------------------------------------------------------------------------------------------------


class SubscriptionSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    report_key = serializers.CharField()
    filters = serializers.DictField()
    frequency = serializers.CharField()
    send_time = ClockTimeField()
    weekday = serializers.IntegerField(allow_null=True)
    month_day = serializers.IntegerField(allow_null=True)
    enabled = serializers.BooleanField()
    disabled_reason = serializers.CharField(
        help_text='"" while enabled by you; MEMBER_LEFT or NO_ACCESS when the sweep turned it off.'
    )
    next_due_at = serializers.DateTimeField(allow_null=True)
    last_sent_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "ReportSubscription"


class SubscriptionListSerializer(serializers.Serializer):
    items = SubscriptionSerializer(many=True)

    class Meta:
        ref_name = "ReportSubscriptionList"


def _filters_field(**kwargs):
    return serializers.DictField(
        child=serializers.CharField(),
        help_text='The report\'s filters (see GET /reports), e.g. {"leadSourceId": "…"}.',
        **kwargs,
    )


class _SubscriptionFields(StrictSerializer):
    report_key = serializers.ChoiceField(choices=tuple(REPORTS))
    filters = _filters_field(required=False)
    frequency = serializers.ChoiceField(choices=Frequency.choices)
    send_time = ClockTimeField(help_text="HH:MM, practice time.")
    weekday = serializers.IntegerField(
        min_value=0, max_value=6, allow_null=True, required=False, help_text="Weekly: 0 Monday … 6 Sunday."
    )
    month_day = serializers.IntegerField(
        min_value=1, max_value=28, allow_null=True, required=False, help_text="Monthly: 1 … 28."
    )
    enabled = StrictBooleanField(required=False)

    def validate_filters(self, value):
        # The parser turned the filter names to snake_case with the rest of the body; they are wire names here.
        return {to_camel(name): item for name, item in value.items()}


class SubscriptionCreateSerializer(_SubscriptionFields):
    class Meta:
        ref_name = "ReportSubscriptionCreate"


class SubscriptionPatchSerializer(NonEmptyPatchSerializer, _SubscriptionFields):
    class Meta:
        ref_name = "ReportSubscriptionPatch"
