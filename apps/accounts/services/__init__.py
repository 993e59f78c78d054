"""Writes of the accounts area, one module per concern:

- users: sign-up, a user found or created by e-mail address
- organizations: practices (and agencies) and memberships
- owner_invitations: practices made without an owner (by partner agencies) and their owner invitations
- api_keys: personal API keys
- team: invitations and members of a practice (roles, workspace, removal), entitlements
- profile: the caller's own profile
- two_factor: TOTP devices, backup codes, the sign-in challenge
- sessions: the browser sessions of a user (recorded, listed, ended)
- media: avatars and practice logos

The names of users, organizations and api_keys are re-exported here, as they were from the former services.py; the
other modules are imported as modules (`from apps.accounts.services import team`). The former module paths
(apps.accounts.team, .profile, .two_factor, .user_sessions, .media) still import, as the same module objects.
"""

from apps.accounts.services import media, profile, sessions, team, two_factor
from apps.accounts.services.api_keys import API_KEY_PREFIX, IssuedApiKey, api_key_create, api_key_revoke
from apps.accounts.services.organizations import membership_add, organization_create
from apps.accounts.services.owner_invitations import (
    invitation_delivery_in_flight,
    organization_create_unowned,
    organization_lock,
    owner_invitation_issue,
    owner_invitation_resend,
    owner_invitations_withdraw,
)
from apps.accounts.services.team import OWNER_INVITATION_WINDOW, OWNER_INVITATIONS_PER_WINDOW
from apps.accounts.services.users import user_get_or_create, user_sign_up

__all__ = [
    "API_KEY_PREFIX",
    "OWNER_INVITATIONS_PER_WINDOW",
    "OWNER_INVITATION_WINDOW",
    "IssuedApiKey",
    "api_key_create",
    "api_key_revoke",
    "invitation_delivery_in_flight",
    "media",
    "membership_add",
    "organization_create",
    "organization_create_unowned",
    "organization_lock",
    "owner_invitation_issue",
    "owner_invitation_resend",
    "owner_invitations_withdraw",
    "profile",
    "sessions",
    "team",
    "two_factor",
    "user_get_or_create",
    "user_sign_up",
]
