"""The OAuth app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (the MCP server): verifying an access token for an audience, the request credential a token
stands for, and marking a connection as just used.
"""

from apps.oauth.authentication import credential_for, verify
from apps.oauth.connections import EXCHANGED_CODE_RETENTION, UNUSED_CODE_RETENTION, disconnect  # apps.audit: retention
from apps.oauth.connections import touch as connection_touch
from apps.oauth.models import Connection


def connections_disconnect_practice(*, organization) -> int:
    """Disconnect every live OAuth connection of the practice (a closing practice: apps.transfer), as DELETE
    /connected-apps/{id} does one: tokens revoked, the connections' webhook endpoints archived. Returns how many."""
    live = list(Connection.objects.for_org(organization).filter(revoked_at__isnull=True))
    for connection in live:
        disconnect(connection)
    return len(live)


__all__ = [
    "EXCHANGED_CODE_RETENTION",
    "UNUSED_CODE_RETENTION",
    "connection_touch",
    "connections_disconnect_practice",
    "credential_for",
    "verify",
]
