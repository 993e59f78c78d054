"""Routes of reports (tag reports, permission report:read) and report subscriptions (tag report-subscriptions,
permission report:subscribe: one's own only). Scope area reports. Another practice's (or another member's)
subscription answers 404; another practice's id in a filter answers 400."""

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView
from apps.reports import params, selectors, services
from apps.reports.api import serializers as s
from apps.reports.models import ReportSubscription

TAGS = ["reports"]
SUBSCRIPTION_TAGS = ["report-subscriptions"]
KEY_PARAM = OpenApiParameter(
    "key", OpenApiTypes.STR, OpenApiParameter.PATH, description="The report's key (see GET /reports)."
)
QUERY_PARAMS = [
    OpenApiParameter("from", OpenApiTypes.DATE, description="First day, practice time (default: 29 days before `to`)."),
    OpenApiParameter("to", OpenApiTypes.DATE, description="Last day, inclusive (default: today, practice time)."),
    OpenApiParameter("refresh", OpenApiTypes.STR, enum=["true", "false"], description="true: recompute now."),
    OpenApiParameter(
        "filters",
        OpenApiTypes.OBJECT,
        style="form",
        explode=True,
        description="The report's own filters, each a query parameter (GET /reports lists them per report).",
    ),
]
RANGE_RULES = (
    "from/to are ISO dates in the practice's time zone, both inclusive; without them the last 30 days (to today). "
    f"At most {params.MAX_DAYS} days; a bad date, from after to, a longer range, an unknown parameter, a bad filter "
    "value or another practice's id answers 400 VALIDATION_ERROR naming the parameter. Answers are cached per "
    "practice, report and parameters for 5 minutes (cached: true, generatedAt says when they were computed); "
    "refresh=true recomputes. Unknown key: 404 REPORT_NOT_FOUND."
)
NOT_FOUND = OpenApiResponse(ApiErrorSerializer, description="Unknown report (REPORT_NOT_FOUND).")


class ReportsView(BaseApiView):
    scope_area = "reports"
    permission = "report:read"

    def answer(self, key: str) -> dict:
        report = selectors.report_get(key)
        found, refresh = params.parse_query(
            organization=self.organization,
            filters=report.filters,
            query=dict(self.request.query_params.items()),
            now=timezone.now(),
        )
        return selectors.report_answer(organization=self.organization, report=report, params=found, refresh=refresh)


class ReportCatalogueView(ReportsView):
    @extend_schema(
        tags=TAGS,
        operation_id="reports_list",
        responses={200: s.ReportCatalogueSerializer},
        summary="The reports there are",
        description="Permission report:read. {items}: each report's key, title, description, filters (query "
        "parameters, with their choices) and columns (of its rows and CSV).",
    )
    def get(self, request):
        return Response({"items": selectors.report_catalogue()})


class ReportView(ReportsView):
    @extend_schema(
        tags=TAGS,
        operation_id="reports_read",
        parameters=[KEY_PARAM, *QUERY_PARAMS],
        responses={200: s.ReportAnswerSerializer, 404: NOT_FOUND},
        summary="One report's figures and rows for a date range",
        description=f"Permission report:read. {RANGE_RULES} Figures are computed by SQL aggregates over the "
        "practice's own records only.",
    )
    def get(self, request, key):
        return Response(self.answer(key))


class ReportExportView(ReportsView):
    def perform_content_negotiation(self, request, force=False):
        # Success is text/csv (below); errors are always the JSON envelope.
        return JSONRenderer(), JSONRenderer.media_type

    @extend_schema(
        tags=TAGS,
        operation_id="reports_export",
        parameters=[KEY_PARAM, *QUERY_PARAMS],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV: the columns, then the rows."),
            404: NOT_FOUND,
        },
        summary="One report's rows as CSV",
        description=f"Permission report:read. The same rows as GET /reports/{{key}} (and the same cache), as a "
        f"text/csv attachment named <key>_<from>_<to>.csv; cells starting with = + - @ are prefixed with an "
        f"apostrophe. {RANGE_RULES}",
    )
    def get(self, request, key):
        answer = self.answer(key)
        response = HttpResponse(selectors.report_csv(answer), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{selectors.csv_filename(answer)}"'
        return response


# --- subscriptions ----------------------------------------------------------------------------------------------------

SUBSCRIBE = "Permission report:subscribe; one's own subscriptions only (another member's or practice's id answers 404)."
FIELDS = (
    'reportKey (GET /reports), filters (that report\'s, e.g. {"leadSourceId": …}), frequency daily (the day before, '
    "every day), weekly (the seven days before, on weekday 0 Monday … 6 Sunday) or monthly (the month before, on "
    "monthDay 1 … 28), sendTime HH:MM in the practice's time zone, enabled. The e-mail goes to the member's address: "
    "a text part, an HTML summary and the report's CSV attached. A member who left the practice or lost "
    "report:read gets nothing: the subscription is turned off (disabledReason MEMBER_LEFT or NO_ACCESS)."
)


class SubscriptionsView(BaseApiView):
    scope_area = "reports"
    permission = "report:subscribe"

    def own(self, id) -> ReportSubscription:
        mine = ReportSubscription.objects.for_org(self.organization).filter(user=self.request.user)
        return self.get_tenant_object(ReportSubscription, id, queryset=mine)


class SubscriptionListView(SubscriptionsView):
    error_statuses = ("409",)

    @extend_schema(
        tags=SUBSCRIPTION_TAGS,
        operation_id="report_subscriptions_list",
        responses={200: s.SubscriptionListSerializer},
        summary="My report subscriptions",
        description=f"{SUBSCRIBE} {{items}}, oldest first (at most {services.MAX_SUBSCRIPTIONS_PER_MEMBER}).",
    )
    def get(self, request):
        rows = selectors.subscriptions_of(organization=self.organization, user=request.user)
        return Response({"items": s.SubscriptionSerializer(rows, many=True).data})

    @extend_schema(
        tags=SUBSCRIPTION_TAGS,
        operation_id="report_subscriptions_create",
        request=s.SubscriptionCreateSerializer,
        responses={201: s.SubscriptionSerializer, 409: OpenApiResponse(ApiErrorSerializer)},
        summary="Subscribe to a report by e-mail",
        description=f"{SUBSCRIBE} {FIELDS} At most {services.MAX_SUBSCRIPTIONS_PER_MEMBER} per member: the next "
        "answers 409 REPORT_SUBSCRIPTION_LIMIT.",
    )
    def post(self, request):
        data = self.parse_body(s.SubscriptionCreateSerializer).validated_data
        subscription = services.subscription_create(organization=self.organization, user=request.user, data=data)
        return Response(s.SubscriptionSerializer(subscription).data, status=201)


class SubscriptionDetailView(SubscriptionsView):
    @extend_schema(
        tags=SUBSCRIPTION_TAGS,
        operation_id="report_subscriptions_read",
        responses={200: s.SubscriptionSerializer},
        summary="One of my report subscriptions",
        description=SUBSCRIBE,
    )
    def get(self, request, id):
        return Response(s.SubscriptionSerializer(self.own(id)).data)

    @extend_schema(
        tags=SUBSCRIPTION_TAGS,
        operation_id="report_subscriptions_update",
        request=s.SubscriptionPatchSerializer,
        responses={200: s.SubscriptionSerializer},
        summary="Change one of my report subscriptions",
        description=f"{SUBSCRIBE} Any of: {FIELDS} A changed schedule, or enabling again, sets the next sending "
        "from now. Changing reportKey without filters clears the filters.",
    )
    def patch(self, request, id):
        subscription = self.own(id)
        data = self.parse_body(s.SubscriptionPatchSerializer, partial=True).validated_data
        subscription = services.subscription_update(
            organization=self.organization, subscription=subscription, data=dict(data)
        )
        return Response(s.SubscriptionSerializer(subscription).data)

    @extend_schema(
        tags=SUBSCRIPTION_TAGS,
        operation_id="report_subscriptions_delete",
        responses={204: None},
        summary="Unsubscribe",
        description=SUBSCRIBE,
    )
    def delete(self, request, id):
        services.subscription_delete(organization=self.organization, subscription=self.own(id))
        return Response(status=204)
