"""Practices and their teams: create and switch practices, invitations (send, preview, accept, reject, withdraw,
list), members' roles, workspaces and removal. Browser-session surfaces."""

from django.conf import settings
from django.contrib.auth import get_user
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.authentication import get_authorization_header
from rest_framework.response import Response

from apps.accounts import roles, selectors, services
from apps.accounts.api import serializers as s
from apps.accounts.api.views import signed_in
from apps.accounts.authentication import SessionCookieAuthentication
from apps.accounts.errors import InvitationNotFound
from apps.accounts.models import Invitation, User
from apps.accounts.services import team
from apps.core.errors import BrowserSessionRequired, OrganizationForbidden, ValidationFailed
from apps.core.fields import UUID_SCHEMA
from apps.core.limits import MinuteWindowLimit
from apps.core.pagination import NewestFirstCursorPagination
from apps.core.permissions import ACCOUNT_AREA, AUTHENTICATED
from apps.core.uuids import parse_uuid
from apps.core.views import BaseApiView

PUBLIC_ACCOUNT_LIMIT = MinuteWindowLimit(
    "auth.invitation", rate=lambda: settings.SVC_PUBLIC_ACCOUNT_RATE, fail_open=True
)


def invitation_body(invitation: Invitation) -> dict:
    inviter = invitation.inviter
    return {
        "id": invitation.id,
        "organization_id": invitation.organization_id,
        "email": invitation.email,
        "role": invitation.role,
        "status": team.invitation_status(invitation),
        "inviter": {"id": inviter.id, "email": inviter.email, "name": inviter.name} if inviter else None,
        "expires_at": invitation.expires_at,
        "created_at": invitation.created_at,
        "responded_at": invitation.responded_at,
    }


def _set_active(request, organization_id) -> None:
    request._request.session[selectors.SESSION_ACTIVE_ORG_KEY] = str(organization_id) if organization_id else None


class OrganizationCreateView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA
    browser_session_only = True

    @extend_schema(
        tags=["organization"],
        request=s.OrganizationCreateInput,
        responses={201: s.OrganizationSummaryOutput},
        summary="Create a practice; you become its owner and it becomes this session's active practice",
        description="Browser session only. Creates a practice with you as its owner and makes it the session's "
        "active practice.",
    )
    def post(self, request):
        data = self.parse_body(s.OrganizationCreateInput).validated_data
        organization = services.organization_create(name=data["name"], owner=request.user, country=data["country"])
        _set_active(request, organization.id)
        body = {f: getattr(organization, f) for f in ("id", "name", "country", "region", "created_at")}
        return Response(s.OrganizationSummaryOutput(body | {"member_role": roles.OWNER}).data, status=201)


class SetActiveOrganizationView(BaseApiView):
    permission = AUTHENTICATED
    scope_area = ACCOUNT_AREA
    browser_session_only = True

    @extend_schema(
        tags=["organization"],
        request=s.SetActiveOrganizationInput,
        responses={200: s.ActiveOrganizationOutput},
        summary="Choose the practice this session acts in (session.activeOrganizationId)",
        description="Browser session only. Body {organizationId}: a practice you belong to, or null to clear the "
        "choice.",
    )
    def post(self, request):
        organization_id = self.parse_body(s.SetActiveOrganizationInput).validated_data["organization_id"]
        if (
            organization_id is not None
            and not selectors.memberships_of(request.user).filter(organization_id=organization_id).exists()
        ):
            raise OrganizationForbidden()
        _set_active(request, organization_id)
        return Response({"activeOrganizationId": str(organization_id) if organization_id else None})


class InviteMemberView(BaseApiView):
    permission = "member:update"
    scope_area = "settings"
    browser_session_only = True
    error_statuses = ("409", "429")

    @extend_schema(
        tags=["organization"],
        request=s.InviteMemberInput,
        responses={201: s.InvitationOutput},
        summary="Invite someone to the active practice (valid 48 hours; the e-mail is sent in the background)",
        description="Owners and managers. Only owners invite owners. Earlier pending invitations of the same "
        "address are withdrawn. Owner-role invitations: at most three e-mails per address per practice per "
        "rolling 24 hours (429 OWNER_INVITATION_LIMIT with Retry-After). An address that already belongs to a "
        "member: 409 OWNER_ALREADY_MEMBER (owner role) or ALREADY_MEMBER.",
    )
    def post(self, request):
        data = self.parse_body(s.InviteMemberInput).validated_data
        invitation = team.invitation_create(actor=self.membership, email=data["email"], role=data["role"])
        return Response(s.InvitationOutput(invitation_body(invitation)).data, status=201)


class InvitationListView(BaseApiView):
    permission = "member:update"
    scope_area = "settings"
    browser_session_only = True
    pagination_class = NewestFirstCursorPagination

    @extend_schema(
        tags=["organization"],
        responses={200: s.InvitationOutput(many=True)},
        summary="Invitations of the active practice, newest first (status expired is derived)",
        description="Permission member:update; browser session only. Newest first, {items, nextCursor} paging until "
        "null; status is pending, expired, accepted, rejected or canceled.",
    )
    def get(self, request):
        invitations = (
            Invitation.objects.for_org(self.organization).select_related("inviter").order_by("-created_at", "-id")
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(invitations, request, view=self)
        items = s.InvitationOutput([invitation_body(i) for i in page], many=True).data
        return Response(paginator.get_paginated_response_data(items))


class CancelInvitationView(BaseApiView):
    permission = "member:update"
    scope_area = "settings"
    browser_session_only = True
    error_statuses = ("409",)

    @extend_schema(
        tags=["organization"],
        request=s.InvitationIdInput,
        responses={200: s.InvitationOutput},
        summary="Withdraw a pending invitation of the active practice",
        description="Permission member:update (owners, managers); browser session only. Withdraws a pending "
        "invitation of the active practice; its link stops working.",
    )
    def post(self, request):
        invitation_id = self.parse_body(s.InvitationIdInput).validated_data["invitation_id"]
        invitation = team.invitation_cancel(organization=self.organization, invitation_id=invitation_id)
        return Response(s.InvitationOutput(invitation_body(invitation)).data)


class InvitationPreviewView(BaseApiView):
    public = True
    rate_limits = (PUBLIC_ACCOUNT_LIMIT,)

    @extend_schema(
        tags=["auth"],
        parameters=[
            OpenApiParameter("id", UUID_SCHEMA, required=True, description="The invitation id from the e-mail.")
        ],
        responses={200: s.InvitationPreviewOutput},
        summary="What an invitation is for, before signing in (no session needed)",
        description="Unknown, withdrawn, answered or expired: 404 INVITATION_NOT_FOUND.",
    )
    def get(self, request):
        raw = request.query_params.get("id")
        if raw is None:
            raise ValidationFailed.for_field("id", "is required")
        invitation_id = parse_uuid(raw.strip())
        if invitation_id is None:
            raise ValidationFailed.for_field("id", "must be a UUID")
        invitation = (
            Invitation.objects.unscoped().select_related("organization", "inviter").filter(pk=invitation_id).first()
        )
        if invitation is None or team.invitation_status(invitation) != Invitation.Status.PENDING:
            raise InvitationNotFound()
        inviter = invitation.inviter
        body = {
            "id": invitation.id,
            "email": invitation.email,
            "role": invitation.role,
            "organization": {"id": invitation.organization_id, "name": invitation.organization.name},
            "inviter": {"id": inviter.id, "email": inviter.email, "name": inviter.name} if inviter else None,
            "expires_at": invitation.expires_at,
            "account_exists": User.objects.filter(email__iexact=invitation.email).exists(),
        }
        return Response(s.InvitationPreviewOutput(body).data)


class InvitationAnswerView(BaseApiView):
    """Answering needs no session when the address has no account yet; a signed-in person must be the invitee
    (and, being cookie-authenticated, passes the CSRF check)."""

    public = True
    rate_limits = (PUBLIC_ACCOUNT_LIMIT,)
    error_statuses = ("401", "403", "404", "409")

    def check_permissions(self, request):
        if get_authorization_header(request):
            raise BrowserSessionRequired()  # machine credentials never answer invitations
        super().check_permissions(request)

    def session_user(self, request) -> User | None:
        # A public view has no authenticators, so DRF has set the Django request's user to None: read the session.
        request._request.user = get_user(request._request)
        authenticated = SessionCookieAuthentication().authenticate(request)
        return authenticated[0] if authenticated else None


class AcceptInvitationView(InvitationAnswerView):
    @extend_schema(
        tags=["auth"],
        request=s.AcceptInvitationInput,
        responses={200: s.InvitationAcceptedOutput},
        summary="Accept an invitation: joins the practice, signing up first when the address has no account",
        description="Signed in as the invited address: adds the membership. Not signed in and no account: "
        "password (and name) create the account and sign in. Not signed in but the address has an account: "
        "401 SIGN_IN_REQUIRED. Signed in as someone else: 403 INVITATION_EMAIL_MISMATCH. The practice becomes "
        "the session's active practice.",
    )
    def post(self, request):
        data = self.parse_body(s.AcceptInvitationInput).validated_data
        user = self.session_user(request)
        invitation, user, created = team.invitation_accept(
            invitation_id=data["invitation_id"], user=user, password=data.get("password"), name=data["name"]
        )
        if created:
            signed_in(request, user)
        _set_active(request, invitation.organization_id)
        body = {
            "invitation": invitation_body(invitation),
            "user": user,
            "account_created": created,
            "active_organization_id": invitation.organization_id,
        }
        return Response(s.InvitationAcceptedOutput(body).data)


class RejectInvitationView(InvitationAnswerView):
    @extend_schema(
        tags=["auth"],
        request=s.InvitationIdInput,
        responses={200: s.InvitationOutput},
        summary="Decline an invitation",
    )
    def post(self, request):
        invitation_id = self.parse_body(s.InvitationIdInput).validated_data["invitation_id"]
        invitation = team.invitation_reject(invitation_id=invitation_id, user=self.session_user(request))
        return Response(s.InvitationOutput(invitation_body(invitation)).data)


def member_access_body(membership) -> dict:
    workspaces, default = selectors.effective_workspaces(membership)
    return {
        "user_id": membership.user_id,
        "role": membership.role,
        "workspaces": workspaces,
        "default_workspace": default,
        "hide_other_workspace": membership.hide_other_workspace,
    }


class MemberViewBase(BaseApiView):
    scope_area = "settings"
    browser_session_only = True
    error_statuses = ("404", "409")


class MemberWorkspaceView(MemberViewBase):
    permission = AUTHENTICATED  # your own always; someone else's needs member:update (checked by the service)

    @extend_schema(
        tags=["settings"],
        request=s.WorkspaceInput,
        responses={200: s.MemberAccessOutput},
        summary="Set a member's default workspace (and whether to hide the other); answers the effective value",
        description="Your own always; another member's needs member:update. A workspace the member's role does "
        "not open: 409 WORKSPACE_UNAVAILABLE. Moves the member's access generation.",
    )
    def put(self, request, user_id):
        data = self.parse_body(s.WorkspaceInput).validated_data
        membership = team.member_set_workspace(
            actor=self.membership,
            user_id=user_id,
            workspace=data["workspace"],
            hide_other_workspace=data.get("hide_other_workspace"),
        )
        return self._answer(membership)

    def _answer(self, membership):
        if membership.user_id == self.membership.user_id:
            self._choice = selectors.OrganizationChoice(membership.organization, membership)  # header: new value
        return Response(s.MemberAccessOutput(member_access_body(membership)).data)


class MemberRoleView(MemberWorkspaceView):
    permission = "member:update"

    @extend_schema(
        tags=["settings"],
        request=s.RoleInput,
        responses={200: s.MemberAccessOutput},
        summary="Change a member's role (only owners grant or take away the owner role; a practice keeps one)",
        description="Permission member:update; browser session only. Body {role}. Only owners grant or take away the "
        "owner role; the practice keeps at least one owner: 409 LAST_OWNER. Moves the member's access generation.",
    )
    def put(self, request, user_id):
        role = self.parse_body(s.RoleInput).validated_data["role"]
        return self._answer(team.member_set_role(actor=self.membership, user_id=user_id, role=role))


class MemberView(MemberViewBase):
    permission = AUTHENTICATED  # leaving yourself always; removing someone else needs member:update

    @extend_schema(
        tags=["settings"],
        request=None,
        responses={200: s.OkOutput},
        summary="Remove a member from the active practice, or leave it yourself (the last owner stays)",
        description="Permission member:update, or yourself (leaving). Browser session only. The last owner cannot "
        "leave or be removed: 409 LAST_OWNER.",
    )
    def delete(self, request, user_id):
        team.member_remove(actor=self.membership, user_id=user_id)
        return Response({"ok": True})
