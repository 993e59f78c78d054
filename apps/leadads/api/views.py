"""Lead-ads settings and submissions (tag lead-ads) and POST /leads (tag leads). Thin: parse, call one service or
selector, render. Connections: reads with settings:read, writes with ads:manage. Submissions (they carry the lead's
answers): patient:read; resolving one makes a lead: patient:create. Another practice's ids answer 404."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.accounts.models import Organization
from apps.core.pagination import offset_page
from apps.core.views import BaseApiView
from apps.leadads import selectors, services
from apps.leadads.api import serializers as s
from apps.leadads.errors import AgencyUnavailable
from apps.leadads.models import LeadAdConnection, LeadAdSubmission

TAGS = ["lead-ads"]
SECRETS_ONCE = (
    "The routing token (and, for search ads, the google_key and the callback URL carrying the token) are shown "
    "in this answer only; the service keeps their SHA-256. "
)


def _created(connection, shown: services.Secrets) -> dict:
    url = services.callback_url(connection.platform, shown.routing_token) if shown.routing_token else None
    return s.ConnectionSerializer(connection).data | {
        "routing_token": shown.routing_token,
        "google_key": shown.google_key,
        "callback_url": url or services.callback_url(connection.platform),
    }


class ConnectionsView(BaseApiView):
    scope_area = "settings"

    def connection(self, id) -> LeadAdConnection:
        return self.get_tenant_object(LeadAdConnection, id)


class ConnectionListView(ConnectionsView):
    permission = {"GET": "settings:read", "POST": "ads:manage"}
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="lead_ad_connections_list",
        parameters=[s.ConnectionListQuerySerializer],
        responses={200: s.ConnectionPageSerializer},
        summary="The practice's lead-ad connections (pages, ad accounts, advertisers), newest first",
        description="Permission settings:read. {items, total, limit, offset}; platform filters by platform. "
        "Credentials are never returned (hasPageToken says whether one is set).",
    )
    def get(self, request):
        query = dict(self.parse_query(s.ConnectionListQuerySerializer).validated_data)
        limit, offset = query.pop("limit"), query.pop("offset")
        rows = selectors.connections_of(organization=self.organization, platform=query.get("platform"))
        items = list(rows[offset : offset + limit])
        return offset_page(s.ConnectionSerializer(items, many=True).data, rows.count(), limit=limit, offset=offset)

    @extend_schema(
        tags=TAGS,
        operation_id="lead_ad_connections_create",
        request=s.ConnectionCreateSerializer,
        responses={201: s.ConnectionCreatedSerializer},
        summary="Connect a page (social), ad account (search) or advertiser (short-video)",
        description="Permission ads:manage. " + SECRETS_ONCE + "Social: pageAccessToken is required (kept "
        "encrypted; leads are fetched with it) and authorizedUserId names who granted it (deauthorization and data "
        "deletion requests name that person). Search ads: paste callbackUrl and googleKey into the ad account's "
        "lead form webhook. Leads are filed under leadSourceId (default: a lead source named after the platform), "
        "open a journey on defaultTreatmentId (else General enquiry) at locationId. A page, ad account or "
        "advertiser already connected to a practice here is 409 LEAD_AD_ALREADY_CONNECTED; ids of another "
        "practice's records are 400.",
    )
    def post(self, request):
        data = dict(self.parse_body(s.ConnectionCreateSerializer).validated_data)
        connection, shown = services.connection_create(organization=self.organization, user=request.user, data=data)
        return Response(_created(connection, shown), status=201)


class ConnectionItemView(ConnectionsView):
    permission = {"GET": "settings:read", "PATCH": "ads:manage", "DELETE": "ads:manage"}
    error_statuses = ("409",)
    current: LeadAdConnection | None = None

    def serializer_context(self) -> dict:
        return super().serializer_context() | {"connection": self.current}

    @extend_schema(
        tags=TAGS,
        operation_id="lead_ad_connections_read",
        responses={200: s.ConnectionSerializer},
        summary="Read one lead-ad connection, with its health",
        description="Permission settings:read. health is healthy, failing (the platform refused the page token; "
        "healthReason says why) or disconnected. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.ConnectionSerializer(self.connection(id)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="lead_ad_connections_update",
        request=s.ConnectionUpdateSerializer,
        responses={200: s.ConnectionCreatedSerializer},
        summary="Update a lead-ad connection; regenerate its routing token or google_key",
        description="Permission ads:manage. Any subset of name, pageAccessToken (a failing social connection turns "
        "healthy: lead_ad_connection.health_changed), authorizedUserId, leadSourceId, defaultTreatmentId, "
        "locationId. regenerateRoutingToken / regenerateGoogleKey (search ads) issue new values, shown in this "
        "answer only (routingToken, googleKey; null otherwise); the old ones stop at once. A disconnected "
        "connection is 409 LEAD_AD_CONNECTION_DISCONNECTED.",
    )
    def patch(self, request, id):
        self.current = self.connection(id)
        data = dict(self.parse_body(s.ConnectionUpdateSerializer).validated_data)
        regenerate_token = data.pop("regenerate_routing_token", False)
        regenerate_key = data.pop("regenerate_google_key", False)
        connection, shown = services.connection_update(
            organization=self.organization,
            user=request.user,
            connection=self.current,
            data=data,
            regenerate_routing_token=regenerate_token,
            regenerate_google_key=regenerate_key,
        )
        return Response(_created(connection, shown))

    @extend_schema(
        tags=TAGS,
        operation_id="lead_ad_connections_disconnect",
        request=None,
        responses={200: s.ConnectionSerializer},
        summary="Disconnect a lead-ad connection (its submissions stay)",
        description="Permission ads:manage. Credentials are wiped and nothing routes to it any more (bodies for its "
        "page are parked, or forwarded to the other region); health turns disconnected with "
        "lead_ad_connection.health_changed. Repeating is harmless.",
    )
    def delete(self, request, id):
        connection = services.connection_disconnect(
            organization=self.organization, user=request.user, connection=self.connection(id)
        )
        return Response(s.ConnectionSerializer(connection).data)


class SubmissionsView(BaseApiView):
    scope_area = "patients"

    def submission(self, id) -> LeadAdSubmission:
        return self.get_tenant_object(LeadAdSubmission, id)


class SubmissionListView(SubmissionsView):
    permission = "patient:read"

    @extend_schema(
        tags=TAGS,
        operation_id="lead_ad_submissions_list",
        parameters=[s.SubmissionListQuerySerializer],
        responses={200: s.SubmissionPageSerializer},
        summary="Leads received from the ad platforms, newest first",
        description="Permission patient:read. {items, total, limit, offset}; filter by status (received, processed, "
        "failed, needs_review) and connectionId (another practice's: 400). reason says why a submission needs "
        "review (test_lead, no_usable_contact) or failed (lead_not_found, lead_unreadable, attempts_exhausted, "
        "dismissed).",
    )
    def get(self, request):
        query = dict(self.parse_query(s.SubmissionListQuerySerializer).validated_data)
        limit, offset = query.pop("limit"), query.pop("offset")
        rows = selectors.submissions_of(
            organization=self.organization, status=query.get("status"), connection=query.get("connection")
        )
        items = list(rows[offset : offset + limit])
        return offset_page(s.SubmissionSerializer(items, many=True).data, rows.count(), limit=limit, offset=offset)


class SubmissionItemView(SubmissionsView):
    permission = "patient:read"

    @extend_schema(
        tags=TAGS,
        operation_id="lead_ad_submissions_read",
        responses={200: s.SubmissionSerializer},
        summary="Read one lead-ad submission",
        description="Permission patient:read. Another practice's id answers 404.",
    )
    def get(self, request, id):
        return Response(s.SubmissionSerializer(self.submission(id)).data)


class SubmissionResolveView(SubmissionsView):
    permission = "patient:create"
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="lead_ad_submissions_resolve",
        request=s.ResolveSerializer,
        responses={200: s.SubmissionSerializer},
        summary="Resolve a submission that needs review: make the lead, or dismiss it",
        description="Permission patient:create. action create_lead makes the lead with the submission's answers "
        "and any corrections sent (firstName, lastName, email, phone): the patient is matched or made, a journey "
        "opened (processed); it still needs a usable e-mail or phone (400). action dismiss → failed (reason "
        "dismissed). Either emits lead_ad_submission.status_changed. A submission not in needs_review is 409 "
        "LEAD_AD_SUBMISSION_NOT_IN_REVIEW.",
    )
    def post(self, request, id):
        submission = self.submission(id)
        data = dict(self.parse_body(s.ResolveSerializer).validated_data)
        action = data.pop("action")
        submission = services.submission_resolve(
            organization=self.organization, user=request.user, submission=submission, action=action, corrections=data
        )
        return Response(s.SubmissionSerializer(submission).data)


class LeadPushView(BaseApiView):
    scope_area = "patients"
    permission = "patient:create"
    error_statuses = ("409",)

    @extend_schema(
        tags=["leads"],
        operation_id="leads_create",
        request=s.LeadPushSerializer,
        responses={
            201: s.PushedLeadSerializer,
            200: OpenApiResponse(s.PushedLeadSerializer, description="A retry with the same externalId and content."),
        },
        summary="Push a lead: match or create the patient and open a journey",
        description="Permission patient:create (OAuth: patients.write). The same reading and dedupe as a capture: "
        "the practice's patient with this e-mail or phone is matched (only its empty fields are filled), else a "
        "new patient is made; a journey opens on treatmentId (else General enquiry) unless one is open there; the "
        "attribution (utm_* values, click ids, landingUrl, referrer) is recorded as a touch; marketingConsent true "
        "grants consent on the e-mail and phone given, with consentEvidence (required then) as evidence. An e-mail "
        "or a phone is required. externalId makes retries safe (200 with the first result; other content under the "
        "same id: 409 LEAD_EXTERNAL_ID_CONFLICT). Unavailable through an agency connection: 403 "
        "AGENCY_UNAVAILABLE.",
    )
    def post(self, request):
        membership = self.membership
        if getattr(request.auth, "acting_membership", None) is not None or (
            membership.organization.kind != Organization.Kind.PRACTICE
        ):
            raise AgencyUnavailable(details={"operation": "POST /leads"})
        data = dict(self.parse_body(s.LeadPushSerializer).validated_data)
        pushed = services.lead_push(
            organization=self.organization, user=request.user, credential_kind=request.auth.kind, data=data
        )
        return Response(s.PushedLeadSerializer(pushed.lead).data, status=200 if pushed.replayed else 201)
