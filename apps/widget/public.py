"""The chat widget's interface to other apps: import from here, never from its other modules or its api/.

What other areas use (GET /bootstrap): whether the practice has an active widget.
"""

from django.db.models import Exists

from apps.widget.models import WidgetConnection


def widget_active(organization) -> Exists:
    """As an expression: the practice has at least one active widget connection."""
    return Exists(WidgetConnection.objects.for_org(organization).filter(active=True))


__all__ = ["widget_active"]
