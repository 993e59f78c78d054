"""The OAuth app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (the MCP server): verifying an access token for an audience, the request credential a token
stands for, and marking a connection as just used.
"""

from apps.oauth.authentication import credential_for, verify
from apps.oauth.connections import touch as connection_touch

__all__ = ["connection_touch", "credential_for", "verify"]
