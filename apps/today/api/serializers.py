"""Wire shapes of the Today view (camelCase on the wire; snake_case here). Rows reuse the areas' own shapes."""

from rest_framework import serializers

from apps.appointments.public import AppointmentSerializer
from apps.journeys.public import JourneySerializer
from apps.patients.public import PatientListItemSerializer
from apps.tasks.public import TaskSerializer
from apps.today.selectors import NEEDS_ACTION_REASONS

UNREADABLE = "null when the credential may not read {} (an OAuth token without that scope)."


class TodayTasksSerializer(serializers.Serializer):
    items = TaskSerializer(many=True, help_text="Soonest due first; up to limit rows (GET /tasks pages through more).")
    total = serializers.IntegerField(help_text="Open tasks assigned to you and due before the end of today.")
    overdue_total = serializers.IntegerField(help_text="Of those, how many are already past due.")

    class Meta:
        ref_name = "TodayTasks"


class TodayAppointmentsSerializer(serializers.Serializer):
    items = AppointmentSerializer(many=True, help_text="Soonest first; up to limit rows (GET /calendar has them all).")
    total = serializers.IntegerField(help_text="The practice's appointments today, cancelled ones left out.")

    class Meta:
        ref_name = "TodayAppointments"


class TodayNewLeadsSerializer(serializers.Serializer):
    items = PatientListItemSerializer(many=True, help_text="Newest first; up to limit rows.")
    total = serializers.IntegerField(help_text="Enquiries and leads created since `since`, not archived or merged.")
    since = serializers.DateTimeField(help_text="The start of yesterday in the practice's timezone.")

    class Meta:
        ref_name = "TodayNewLeads"


class TodayJourneySerializer(JourneySerializer):
    needs_action_reasons = serializers.ListField(
        child=serializers.ChoiceField(choices=NEEDS_ACTION_REASONS),
        help_text="no_next_step: the patient has no open task and no booked, confirmed or arrived appointment from "
        "today on; stale: in its stage for staleAfterDays days or more.",
    )

    class Meta:
        ref_name = "TodayJourney"


class TodayJourneysSerializer(serializers.Serializer):
    items = TodayJourneySerializer(many=True, help_text="Longest in their stage first; up to limit rows.")
    total = serializers.IntegerField(help_text="Open journeys assigned to you or to nobody that need action.")
    stale_after_days = serializers.IntegerField()

    class Meta:
        ref_name = "TodayJourneys"


class TodaySerializer(serializers.Serializer):
    date = serializers.DateField(help_text="Today in the practice's timezone.")
    timezone = serializers.CharField(help_text="The practice's IANA timezone (UTC while it has none).")
    generated_at = serializers.DateTimeField()
    tasks = TodayTasksSerializer()
    appointments = TodayAppointmentsSerializer(allow_null=True, help_text=UNREADABLE.format("appointments"))
    new_leads = TodayNewLeadsSerializer(allow_null=True, help_text=UNREADABLE.format("patients"))
    journeys = TodayJourneysSerializer(allow_null=True, help_text=UNREADABLE.format("journeys"))

    class Meta:
        ref_name = "Today"
