"""The scope areas of the API, in one place. A plain module (no Django import), so settings can build the OAuth scope
list from it: `<area>.read` / `<area>.write` for each OAUTH_AREAS entry."""

# Areas an OAuth client may be granted read or write on, one by one.
OAUTH_AREAS = (
    "patients",
    "appointments",
    "journeys",
    "tasks",
    "conversations",
    "treatments",
    "campaigns",
    "deposits",
    "reputation",
    "reports",
    "webhooks",
    "settings",
)
# Scope area of account-wide routes: OAuth tokens need the coarse read/write scope there.
ACCOUNT_AREA = "account"
# Calls and recordings: one scope of its own ("dialer"), no read/write pair.
DIALER_AREA = "dialer"
# The clinical workspace: session-only routes (views with `clinical = True`), so no OAuth token ever needs it.
CLINICAL_AREA = "clinical"
# Every area a view may declare as its `scope_area`.
SCOPE_AREAS = frozenset({*OAUTH_AREAS, DIALER_AREA, ACCOUNT_AREA, CLINICAL_AREA})
