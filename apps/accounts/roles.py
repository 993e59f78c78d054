"""Roles → permissions and workspaces: the one table every request reads.

Permissions are `<resource>:<action>`. Routes declare the permission they need (view attribute `permission`).
Clinical roles (dentist, hygienist, nurse) hold no permission on CRM-only resources: they open the clinical
workspace only. `patient:erase` (right to erasure, DELETE /patients/{id}) is the owner's alone; `patient:delete`
(archiving in bulk, merging) is held by owners and managers; `patient:export` (CSV of the list) by owners,
managers and analysts. `inbox:work` (reading and working conversations) is held by the roles that answer patients
(owner, manager, front desk, telesales); analysts read the inbox's counts only (`conversation:read`).
`teamchat:use` (team chat between colleagues) is every role's; `teamchat:manage` (rename, archive and remove members
of any channel the holder can see, not only the ones they created) is the owners' and managers'.
`notification:use` (one's own notification feed and its switches) is every role's.
`dialer:use` (the call log, click-to-call, voicemails) is held by owners, managers, front desk and telesales;
`dialer:recording` (listening to recorded calls) by owners and managers only (apps.dialer).

The clinical workspace (apps.pms and the clinical apps; its routes are session-only and closed while the practice
has no clinical workspace):
- `pms:diary` — the day list, booking from the clinical diary, recalls, the waitlist, sending patient forms and the
  PMS inbox: everyone who opens the clinical workspace (owner, manager, front desk, dentist, hygienist, nurse).
- `clinical:read` — the patient record and its clinical content (notes, medical history, treatment plans, clinical
  documents): the clinicians, and owners and managers who answer for the practice's records. Not front desk.
- `clinical:write` — writing clinical records (notes, plans, medical history, documents, treatment templates):
  dentist, hygienist, nurse.
- `clinical:sign` — signing clinical acts (a note; later prescriptions), with fresh re-authentication evidence:
  dentist and hygienist.
- `pms:manage` — the connected PMS (connection, import, sync review), chairs, the procedure catalogue and fees:
  owner and manager. (Linking a practitioner to a member is a settings change: `settings:update`.)

Running the practice (issue 24):
- `report:read` — reports and their CSV downloads: owners, managers and analysts; `report:subscribe` — one's own
  report subscriptions (e-mailed reports): the same roles.
- `audit:read` — the audit log and its CSV: owners and managers.
- `automation:manage` — automation rules, their runs and dry runs: owners and managers.
- `transfer:manage` — imports of patients and exports of the practice's data: owners and managers.
- `practice:archive` — the practice archive (a departing practice's closing): the owner alone.
- `agreement:accept` — accepting the practice's agreements (terms, data-processing agreement): the owner alone.
"""

OWNER = "owner"
MANAGER = "manager"
FRONT_DESK = "front_desk"
TELESALES = "telesales"
ANALYST = "analyst"
DENTIST = "dentist"
HYGIENIST = "hygienist"
NURSE = "nurse"

ROLES = (OWNER, MANAGER, FRONT_DESK, TELESALES, ANALYST, DENTIST, HYGIENIST, NURSE)
ROLE_CHOICES = [(role, role.replace("_", " ").title()) for role in ROLES]
CLINICAL_ROLES = frozenset({DENTIST, HYGIENIST, NURSE})

CRM = "crm"
PMS = "pms"
WORKSPACES = (CRM, PMS)
WORKSPACE_CHOICES = [(w, w) for w in WORKSPACES]

# CRM resources with the usual four actions.
_CRM_RESOURCES = (
    "patient",
    "journey",
    "task",
    "appointment",
    "conversation",
    "treatment",
    "campaign",
    "deposit",
    "reputation",
)


def _crud(resource: str, *actions: str) -> set[str]:
    return {f"{resource}:{action}" for action in (actions or ("read", "create", "update", "delete"))}


_ALL_CRM = set().union(*(_crud(r) for r in _CRM_RESOURCES))
_READ_CRM = {f"{r}:read" for r in _CRM_RESOURCES}
_ORG_ADMIN = {
    "settings:read",
    "settings:update",
    "member:read",
    "member:update",
    "ads:manage",
    "webhook:manage",
    "report:read",
    "report:subscribe",
    "audit:read",
    "automation:manage",
    "transfer:manage",
    "dialer:use",
    "dialer:recording",
}
# The clinical workspace (see the module docstring).
_PMS_DIARY = {"pms:diary"}
_CLINICAL_OVERSIGHT = {"pms:diary", "clinical:read", "pms:manage"}
_CLINICIAN = {"pms:diary", "clinical:read", "clinical:write", "clinical:sign"}
# Team chat: every member talks to colleagues; owners and managers also look after every channel (apps.teamchat).
_TEAMCHAT = {"teamchat:use"}
_TEAMCHAT_MANAGE = {"teamchat:use", "teamchat:manage"}

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    OWNER: frozenset(
        _ALL_CRM
        | _ORG_ADMIN
        | _TEAMCHAT_MANAGE
        | _CLINICAL_OVERSIGHT
        | {"patient:erase", "patient:export", "inbox:work", "practice:archive", "agreement:accept"}
    ),
    MANAGER: frozenset(
        _ALL_CRM | _ORG_ADMIN | _TEAMCHAT_MANAGE | _CLINICAL_OVERSIGHT | {"patient:export", "inbox:work"}
    ),
    FRONT_DESK: frozenset(
        _crud("patient", "read", "create", "update")
        | _crud("appointment")
        | _crud("task")
        | _crud("conversation")
        | _crud("journey", "read", "create", "update")
        | _crud("deposit", "read", "create")
        | {"treatment:read", "reputation:read", "reputation:update", "campaign:read", "settings:read", "member:read"}
        | {"dialer:use"}
        | {"inbox:work"}
        | _TEAMCHAT
        | _PMS_DIARY
    ),
    TELESALES: frozenset(
        _crud("patient", "read", "create", "update")
        | _crud("journey", "read", "create", "update")
        | _crud("task")
        | _crud("conversation")
        | _crud("appointment", "read", "create", "update")
        | {"treatment:read", "campaign:read", "deposit:read", "settings:read", "member:read", "dialer:use"}
        | {"inbox:work"}
        | _TEAMCHAT
    ),
    ANALYST: frozenset(
        _READ_CRM | _TEAMCHAT | {"report:read", "report:subscribe", "settings:read", "member:read", "patient:export"}
    ),
    DENTIST: frozenset(_TEAMCHAT | _CLINICIAN | {"member:read"}),
    HYGIENIST: frozenset(_TEAMCHAT | _CLINICIAN | {"member:read"}),
    NURSE: frozenset(_TEAMCHAT | (_CLINICIAN - {"clinical:sign"}) | {"member:read"}),
}
# Every member has their own notification feed and switches in each practice (apps.notifications).
_EVERY_MEMBER = frozenset({"notification:use"})
ROLE_PERMISSIONS = {role: permissions | _EVERY_MEMBER for role, permissions in ROLE_PERMISSIONS.items()}

ALL_PERMISSIONS: frozenset[str] = frozenset().union(*ROLE_PERMISSIONS.values())


def role_has_permission(role: str, permission: str) -> bool:
    return permission in ROLE_PERMISSIONS.get(role, frozenset())


def role_workspaces(role: str, *, clinical_available: bool) -> list[str]:
    """Workspaces a role opens. Clinical roles always name pms (their only home) even before the practice has
    the clinical workspace; /auth/me reports pmsAccess.pmsWorkspaceAvailable so clients know it is closed."""
    if role in CLINICAL_ROLES:
        return [PMS]
    if role in (OWNER, MANAGER, FRONT_DESK) and clinical_available:
        return [CRM, PMS]
    return [CRM]
