"""The lead-ads app's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (the setup status in apps.partners): whether a practice has a connected lead-ad connection.
"""

from apps.leadads.selectors import configured


def setup_area(organization) -> dict:
    """The setup status's leadAds area: offered here; configured once a page, ad account or advertiser is
    connected."""
    return {"available": True, "configured": configured(organization)}


__all__ = ["setup_area"]
