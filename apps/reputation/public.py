"""The reputation app's interface to other apps: import from here, never from its other modules or its api/.

The reports area reads review figures (`review_summary`). Reputation reaches patients (erasure and merge
hooks), appointments (the appointment a request follows) and conversations (queue_messages) through their
public modules.
"""

from django.db.models import Exists

from apps.reputation.models import ReviewSource, SourceStatus
from apps.reputation.reporting import review_summary


def review_source_active(organization) -> Exists:
    """As an expression (GET /bootstrap): the practice has an active review source (a connected business profile)."""
    return Exists(ReviewSource.objects.for_org(organization).filter(status=SourceStatus.ACTIVE))


__all__ = ["review_source_active", "review_summary"]
