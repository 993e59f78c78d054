"""Partner agencies: the practices an agency created (list, create), their owner invitation (resend or correct,
withdraw), and a practice's setup status.

/partner/* acts on the agency (MCP calls without a practice argument); members of an ordinary practice get 403.
GET /settings/practice/setup-status acts in the practice (an agency reaches it through MCP's practice argument).
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from apps.accounts.models import Invitation, Organization
from apps.accounts.services.team import invitation_status
from apps.core.errors import PermissionDenied
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.views import BaseApiView
from apps.partners import selectors, services
from apps.partners.api import serializers as s
from apps.partners.errors import AgencyRequired

TAGS = ["partners"]  # agency routes: the spec names no tag group for them
PRACTICE_ID = OpenApiParameter(
    "organization_id", str, OpenApiParameter.PATH, description="organizationId from GET /partner/practices."
)


def owner_invitation_summary(invitation: Invitation | None) -> dict | None:
    if invitation is None:
        return None
    return {
        "email": invitation.email,
        "status": invitation_status(invitation),
        "expires_at": invitation.expires_at,
        "delivery": invitation.delivery,
    }


def owner_invitation_body(invitation: Invitation) -> dict:
    return owner_invitation_summary(invitation) | {
        "id": invitation.id,
        "organization_id": invitation.organization_id,
        "created_at": invitation.created_at,
        "last_sent_at": invitation.last_sent_at,
    }


def practice_body(link, *, owner_joined: bool, invitation: Invitation | None) -> dict:
    practice = link.practice
    return {
        "organization_id": practice.id,
        "name": practice.name,
        "country": practice.country,
        "region": practice.region,
        "owner_joined": owner_joined,
        "created_at": link.created_at,
        "owner_invitation": owner_invitation_summary(invitation),
    }


class AgencyView(BaseApiView):
    """Acts on the caller's agency: the resolved organization must be of kind partner."""

    scope_area = "settings"

    def check_permissions(self, request):
        super().check_permissions(request)
        organization = self.organization
        if organization.kind != Organization.Kind.PARTNER:
            raise AgencyRequired(details={"organizationKind": organization.kind})


class PartnerPracticesView(AgencyView):
    permission = {"GET": "member:read", "POST": "settings:update"}
    error_statuses = ("429",)
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        tags=TAGS,
        responses={200: s.PartnerPracticeOutput(many=True)},
        summary="Practices this agency created and still links, newest first, with ownerJoined",
        description="Agency members only (an organization of kind partner); members of a practice get 403.",
    )
    def get(self, request):
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(selectors.practice_list(agency=self.organization), request, view=self)
        invitations = selectors.newest_owner_invitations(link.practice_id for link in page)
        items = [
            practice_body(link, owner_joined=link.owner_joined, invitation=invitations.get(link.practice_id))
            for link in page
        ]
        return Response(paginator.get_paginated_response_data(s.PartnerPracticeOutput(items, many=True).data))

    @extend_schema(
        tags=TAGS,
        request=s.PartnerPracticeCreateInput,
        responses={201: s.PartnerPracticeOutput, 200: s.PartnerPracticeOutput},
        summary="Create a practice for this agency and invite its owner (48 hours)",
        description="Owners and managers of a partner agency. The practice is created in this region and linked "
        "to the agency; ownerEmail receives a 48-hour owner invitation. An identical repeat (same name, country "
        "and ownerEmail while the practice is still linked) answers 200 with the practice made and mails nobody. "
        "At most 100 creations per agency per rolling 24 hours: 429 PARTNER_CREATE_LIMIT with Retry-After.",
    )
    def post(self, request):
        data = self.parse_body(s.PartnerPracticeCreateInput).validated_data
        link, created = services.practice_create(
            actor=self.membership, name=data["name"], owner_email=data["owner_email"], country=data["country"]
        )
        body = practice_body(
            link,
            owner_joined=selectors.owner_joined(link.practice),
            invitation=selectors.newest_owner_invitation(link.practice),
        )
        return Response(s.PartnerPracticeOutput(body).data, status=201 if created else 200)


class OwnerInvitationView(AgencyView):
    permission = "settings:update"
    error_statuses = ("409", "429")

    @extend_schema(
        tags=TAGS,
        parameters=[PRACTICE_ID],
        request=s.PartnerOwnerInvitationInput,
        responses={200: s.PartnerOwnerInvitationSentOutput},
        summary="Resend or correct the owner invitation of a practice this agency created",
        description="Only practices the agency created and still links (else 404 PRACTICE_NOT_FOUND). A repeat "
        "within an hour of the last e-mail, or while it is being queued, answers sent false and mails nobody. A "
        "parked last e-mail is sent again as the same e-mail. A new address withdraws every other pending owner "
        "invitation and any other pending invitation to that address. 409 PRACTICE_OWNER_JOINED after the owner "
        "joined; 409 OWNER_ALREADY_MEMBER when the address belongs to a member; at most three owner e-mails per "
        "address per practice per rolling 24 hours (429 OWNER_INVITATION_LIMIT with Retry-After).",
    )
    def post(self, request, organization_id):
        data = self.parse_body(s.PartnerOwnerInvitationInput).validated_data
        outcome = services.owner_invitation_send(
            actor=self.membership, practice_id=organization_id, owner_email=data["owner_email"]
        )
        body = {
            "sent": outcome.sent,
            "delivery": outcome.invitation.delivery,
            "invitation": owner_invitation_body(outcome.invitation),
        }
        return Response(s.PartnerOwnerInvitationSentOutput(body).data)

    @extend_schema(
        tags=TAGS,
        parameters=[PRACTICE_ID],
        responses={200: s.PartnerOwnerInvitationWithdrawnOutput},
        summary="Withdraw the open owner invitation of a practice this agency created",
        description="Answers canceled, the count withdrawn (0 when none was open). 404 PRACTICE_NOT_FOUND for a "
        "practice the agency did not create or no longer links; 409 PRACTICE_OWNER_JOINED after the owner joined.",
    )
    def delete(self, request, organization_id):
        canceled = services.owner_invitation_withdraw(actor=self.membership, practice_id=organization_id)
        return Response(s.PartnerOwnerInvitationWithdrawnOutput({"canceled": canceled}).data)


class SetupStatusView(BaseApiView):
    # Owners and managers hold settings:update; an agency member acting inside a linked practice (MCP's practice
    # argument) may read it whatever their role.
    permission = "settings:update"
    scope_area = "settings"

    def check_permissions(self, request):
        try:
            super().check_permissions(request)
        except PermissionDenied:
            choice = self._choice
            if choice is None or not selectors.is_agency_acting(choice.membership):
                raise
        if self.organization.kind != Organization.Kind.PRACTICE:
            raise PermissionDenied(
                "An agency has no setup status of its own: name one of its practices (MCP's practice argument).",
                details={"organizationKind": self.organization.kind},
            )

    @extend_schema(
        tags=["settings"],
        responses={200: s.SetupStatusOutput},
        summary="What the practice has set up so far: owner, team and the setup guide",
        description="Reads only. Owners, managers and agency members acting inside a linked practice; other "
        "roles 403, and so does an agency acting on itself. website is configured once an active website has an "
        "allowed domain and a capture form its pages can use; leadAds once a lead-ad connection is connected; "
        "emailDomains once an e-mail channel connection is active (its provider delivers verified callbacks). "
        "pendingAgreements lists the current agreement versions (id, kind, version, title) the practice has not "
        "accepted yet (an owner accepts them at POST /agreements/{id}/accept, in a browser session). conversions "
        "(sending conversions to ad platforms) is not offered by this deployment: available false, configured false. "
        "The guide's steps follow the same areas.",
    )
    def get(self, request):
        status = selectors.setup_status(practice=self.organization)
        status["owner"]["invitation"] = owner_invitation_summary(status["owner"]["invitation"])
        return Response(s.SetupStatusOutput(status).data)
