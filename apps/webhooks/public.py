"""The webhooks app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (apps.oauth): the registry of the check that tells the sweep which connections still exist
(filled in OAuthConfig.ready()), and archiving the endpoints of a disconnected app. apps.conversations fetches
provider media from URLs that arrive in callbacks: it vets each one with the same SSRF guard as the sender (`vet`
returns the pinned address to connect to, `check_url_shape` makes only the static checks, `UnsafeDestination` says
why a URL is refused).
"""

from apps.webhooks.delivery import RETENTION as DELIVERY_RETENTION  # apps.audit: GET /compliance/retention
from apps.webhooks.models import MAX_ENDPOINTS, WebhookEndpoint
from apps.webhooks.sender import Destination, UnsafeDestination, check_url_shape, vet
from apps.webhooks.services import endpoint_archive, endpoints_archive_for_connection, register_connection_checker


def endpoints_archive_practice(*, organization) -> int:
    """Archive every endpoint of the practice (a closing practice: apps.transfer), as DELETE
    /settings/webhook-endpoints/{id} does one: queued deliveries fail. Returns how many were archived."""
    live = list(WebhookEndpoint.objects.for_org(organization).filter(archived_at__isnull=True))
    for endpoint in live:
        endpoint_archive(organization=organization, endpoint=endpoint)
    return len(live)


__all__ = [
    "DELIVERY_RETENTION",
    "MAX_ENDPOINTS",
    "Destination",
    "UnsafeDestination",
    "check_url_shape",
    "endpoints_archive_for_connection",
    "endpoints_archive_practice",
    "register_connection_checker",
    "vet",
]
