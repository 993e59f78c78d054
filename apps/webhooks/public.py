"""The webhooks app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (apps.oauth): the registry of the check that tells the sweep which connections still exist
(filled in OAuthConfig.ready()), and archiving the endpoints of a disconnected app.
"""

from apps.webhooks.services import endpoints_archive_for_connection, register_connection_checker

__all__ = ["endpoints_archive_for_connection", "register_connection_checker"]
