from django.urls import path

from apps.accounts.api import security_views, team_views, views

urlpatterns = [
    path("auth/sign-up/email", views.SignUpView.as_view()),
    path("auth/sign-in/email", views.SignInView.as_view()),
    path("auth/sign-out", views.SignOutView.as_view()),
    path("auth/request-password-reset", views.RequestPasswordResetView.as_view()),
    path("auth/reset-password", views.ResetPasswordView.as_view()),
    path("auth/send-verification-email", views.SendVerificationEmailView.as_view()),
    path("auth/verify-email", views.VerifyEmailView.as_view()),
    path("auth/api-key/create", views.ApiKeyCreateView.as_view()),
    path("auth/api-key/delete", views.ApiKeyDeleteView.as_view()),
    path("auth/me", views.MeView.as_view()),
    path("user/api-keys", views.ApiKeyListView.as_view()),
    path("organization/mine", views.OrganizationMineView.as_view()),
    path("organization/active", views.OrganizationActiveView.as_view()),
    path("organization/members", views.OrganizationMembersView.as_view()),
    # Two-factor, the second step of a sign-in, fresh re-authentication.
    path("user/two-factor", security_views.TwoFactorView.as_view()),
    path("user/two-factor/setup", security_views.TwoFactorSetupView.as_view()),
    path("user/two-factor/verify", security_views.TwoFactorVerifyView.as_view()),
    path("user/two-factor/disable", security_views.TwoFactorDisableView.as_view()),
    path("user/two-factor/backup-codes", security_views.BackupCodesView.as_view()),
    path("user/reauthenticate", security_views.ReauthenticateView.as_view()),
    path("auth/two-factor/verify-totp", security_views.VerifyTotpView.as_view()),
    path("auth/two-factor/verify-backup-code", security_views.VerifyBackupCodeView.as_view()),
    # Practices, invitations, members.
    path("auth/organization/create", team_views.OrganizationCreateView.as_view()),
    path("auth/organization/set-active", team_views.SetActiveOrganizationView.as_view()),
    path("auth/organization/invite-member", team_views.InviteMemberView.as_view()),
    path("auth/organization/list-invitations", team_views.InvitationListView.as_view()),
    path("auth/organization/cancel-invitation", team_views.CancelInvitationView.as_view()),
    path("auth/organization/accept-invitation", team_views.AcceptInvitationView.as_view()),
    path("auth/organization/reject-invitation", team_views.RejectInvitationView.as_view()),
    path("auth/invitation-preview", team_views.InvitationPreviewView.as_view()),
    path("settings/team/members/<uuid_param:user_id>", team_views.MemberView.as_view()),
    path("settings/team/members/<uuid_param:user_id>/role", team_views.MemberRoleView.as_view()),
    path("settings/team/members/<uuid_param:user_id>/workspace", team_views.MemberWorkspaceView.as_view()),
]
