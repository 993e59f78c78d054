"""The lead-ads app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (the setup status in apps.partners): whether a practice has a connected lead-ad connection.
"""

from django.db.models import Exists

from apps.leadads.models import Health, LeadAdConnection


def lead_ads_connected(organization) -> Exists:
    """As an expression (for one query of several areas, GET /bootstrap): the practice has a lead-ad connection that
    is not disconnected (the same rule as apps.leadads.selectors.configured)."""
    return Exists(LeadAdConnection.objects.for_org(organization).exclude(health=Health.DISCONNECTED))


__all__ = ["lead_ads_connected"]
