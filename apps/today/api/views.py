"""GET /today: the signed-in member's day in one request. The live socket (/today/ws) is in apps.today.consumers."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from apps.accounts.roles import role_has_permission
from apps.core.permissions import required_scopes
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.serializers import StrictSerializer
from apps.core.views import BaseApiView
from apps.today import selectors
from apps.today.api import serializers as s
from apps.today.renderers import today_body

# The route is filed under tasks (its permission and scope area). Each other section needs read access to its own
# area: a credential without it (an OAuth token's scopes; no CRM role lacks these today) gets null there.
SECTION_ACCESS = {
    "appointments": ("appointments", "appointment:read"),
    "new_leads": ("patients", "patient:read"),
    "journeys": ("journeys", "journey:read"),
}

LIVE_UPDATES = """

**Live updates: `GET /today/ws`** (WebSocket, browser session cookie; `?organizationId=` picks the practice like
X-Organization-ID, else the session's active practice or the only membership). After the handshake every event of
the practice's outbox arrives as one text frame carrying the webhook envelope (`version`, `id`, `type`, `createdAt`,
`organizationId`, `subject`, `actor`, `data`) once its transaction has committed, limited to what your role may
read (patient.* needs patient:read, journey.* journey:read, task.* task:read, appointment.* appointment:read,
conversation.* and message.* conversation:read, deposit_request.* deposit:read, reputation_* reputation:read, the
rest settings:read). The role is re-read for every delivery. A commit of more than 1,000 events sends one
`{"type": "live.resync", "organizationId", "count"}` frame instead: fetch again. Frames from the client are ignored.
The handshake is refused (close before accept; HTTP 403 through the server) with 4401 without a valid session,
4403 without a practice or any readable event, 4400 for a malformed organizationId and 4429 past the per-user
bucket (300 at once, then 5 per second). A socket whose session ends closes with 4401, one whose member lost access
with 4403."""


class TodayQuerySerializer(StrictSerializer):
    limit = serializers.IntegerField(
        min_value=1,
        max_value=selectors.MAX_LIMIT,
        default=selectors.DEFAULT_LIMIT,
        help_text="Rows per section; each section carries its total.",
    )


class TodayView(BaseApiView):
    permission = "task:read"
    scope_area = "tasks"
    renderer_classes = [CamelCaseJSONRenderer]

    def readable_sections(self, request) -> set[str]:
        role, scopes = self.membership.role, request.auth.scopes
        return {
            name
            for name, (area, permission) in SECTION_ACCESS.items()
            if role_has_permission(role, permission) and (scopes is None or scopes & required_scopes("GET", area))
        }

    @extend_schema(
        tags=["today"],
        operation_id="today_read",
        parameters=[TodayQuerySerializer],
        responses={200: s.TodaySerializer},
        summary="My day: my tasks due and overdue, today's appointments, new leads, journeys needing action",
        description="One request, a fixed number of queries. Today is the practice's calendar day (its timezone; "
        "UTC while it has none). tasks: open tasks assigned to you due before the end of today, overdue ones "
        "included. appointments: the practice's appointments overlapping today, cancelled ones left out. newLeads: "
        "enquiries and leads created since the start of yesterday. journeys: open journeys assigned to you or to "
        "nobody with no next step (the patient has no open task and no booked, confirmed or arrived appointment "
        "from today on) or in their stage for 7 days or more. Each list is capped and carries its total. A "
        "section the credential may not read (an OAuth token without read access to appointments, patients or "
        "journeys) is null." + LIVE_UPDATES,
    )
    def get(self, request):
        limit = self.parse_query(TodayQuerySerializer).validated_data["limit"]
        day = selectors.today_for_member(
            organization=self.organization, user=request.user, sections=self.readable_sections(request), limit=limit
        )
        # TodaySerializer's output (it stays the documented schema), written from the selectors' value rows.
        return Response(today_body(day))
