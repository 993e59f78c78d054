"""Routes of the agreements area (tag agreements): the practice's agreements, their text, the owner's acceptance and
the acceptance history.

/agreements is a browser-session surface (spec Authentication rule 9): API keys and OAuth tokens answer 403
BROWSER_SESSION_REQUIRED before routing (apps.core.middleware.BrowserSessionSurfaceMiddleware), and the views refuse
them too (`browser_session_only`, so an in-process call such as the MCP server's cannot reach them either).
Owners and managers read (settings:update, the permission that reads the setup status); only owners accept
(agreement:accept)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from apps.agreements import selectors, services
from apps.agreements.api import serializers as s
from apps.core.errors import NotFound
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.schema import ApiErrorSerializer
from apps.core.views import BaseApiView

TAGS = ["agreements"]
ACCESS = (
    "Browser session only: an API key or OAuth token answers 403 BROWSER_SESSION_REQUIRED. Owners and managers read; "
    "other roles 403. "
)


class AgreementsView(BaseApiView):
    browser_session_only = True
    scope_area = "settings"
    permission = "settings:update"

    def published_agreement(self, agreement_id):
        """A published version (current or superseded); a draft, a scheduled or an unknown id is the same 404."""
        agreement = selectors.published_agreements().filter(pk=agreement_id).first()
        if agreement is None:
            raise NotFound("No such agreement.")
        return agreement


class AgreementListView(AgreementsView):
    @extend_schema(
        tags=TAGS,
        operation_id="agreements_list",
        responses={200: s.AgreementListSerializer},
        summary="The practice's agreements: the current version of each kind and whether it is accepted",
        description=ACCESS + "{items, pendingCount}: the current (newest published) version of the terms of service "
        "and of the data-processing agreement, terms first, each with acceptance (who and when, or null) and pending "
        "(current, needs acceptance, not accepted by this practice). Publishing a new version makes it pending again "
        "for every practice. The text is at GET /agreements/{id}.",
    )
    def get(self, request):
        states = selectors.current_states(organization=self.organization)
        return Response(
            s.AgreementListSerializer({"items": states, "pending_count": sum(state.pending for state in states)}).data
        )


class AcceptanceListView(AgreementsView):
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        tags=TAGS,
        operation_id="agreements_acceptances_list",
        responses={200: s.AcceptanceSerializer(many=True)},
        summary="The practice's acceptance history, newest first",
        description=ACCESS + "{items, nextCursor}: every version this practice accepted (superseded ones included), "
        "with who accepted (id, and the name they had then), when and from which network (address block). Kept for "
        "the practice's whole life.",
    )
    def get(self, request):
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(
            selectors.acceptance_history(organization=self.organization), request, view=self
        )
        return Response(paginator.get_paginated_response_data(s.AcceptanceSerializer(page, many=True).data))


class AgreementDetailView(AgreementsView):
    @extend_schema(
        tags=TAGS,
        operation_id="agreements_read",
        responses={200: s.AgreementDetailSerializer},
        summary="Read one agreement version, with its text",
        description=ACCESS + "Any published version, current or superseded (current false), with body and this "
        "practice's acceptance of it. A draft or unknown id answers 404.",
    )
    def get(self, request, id):
        agreement = self.published_agreement(id)
        state = selectors.agreement_state(organization=self.organization, agreement=agreement)
        return Response(s.AgreementDetailSerializer(state).data)


class AgreementAcceptView(AgreementsView):
    permission = "agreement:accept"
    error_statuses = ("409",)

    @extend_schema(
        tags=TAGS,
        operation_id="agreements_accept",
        request=None,
        responses={
            201: s.AcceptanceSerializer,
            200: OpenApiResponse(s.AcceptanceSerializer, description="Already accepted: the first acceptance."),
            409: OpenApiResponse(
                ApiErrorSerializer,
                description="AGREEMENT_SUPERSEDED (details name the current version: currentId, currentVersion).",
            ),
        },
        summary="Accept an agreement version on behalf of the practice (owners only)",
        description="Browser session only: an API key or OAuth token answers 403 BROWSER_SESSION_REQUIRED. Owners "
        "only (agreement:accept); managers and other roles 403. No body. Records who accepted, when and the address "
        "block; answers 201 with the acceptance. Accepting a version already accepted changes nothing and answers 200 "
        "with the first acceptance. A superseded version answers 409 AGREEMENT_SUPERSEDED naming the current one; a "
        "draft or unknown id 404.",
    )
    def post(self, request, id):
        agreement = self.published_agreement(id)
        result = services.agreement_accept(
            organization=self.organization,
            user=request.user,
            agreement=agreement,
            address=request.META.get("REMOTE_ADDR"),
        )
        return Response(s.AcceptanceSerializer(result.acceptance).data, status=201 if result.created else 200)
