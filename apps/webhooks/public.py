"""The webhooks app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (apps.oauth): the registry of the check that tells the sweep which connections still exist
(filled in OAuthConfig.ready()), and archiving the endpoints of a disconnected app. apps.conversations fetches
provider media from URLs that arrive in callbacks: it vets each one with the same SSRF guard as the sender (`vet`
returns the pinned address to connect to, `check_url_shape` makes only the static checks, `UnsafeDestination` says
why a URL is refused).
"""

from apps.webhooks.sender import Destination, UnsafeDestination, check_url_shape, vet
from apps.webhooks.services import endpoints_archive_for_connection, register_connection_checker

__all__ = [
    "Destination",
    "UnsafeDestination",
    "check_url_shape",
    "endpoints_archive_for_connection",
    "register_connection_checker",
    "vet",
]
