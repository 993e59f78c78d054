"""Aggregate reads of reviews for the reports area (apps.reports): counts and ratings only, never a comment or a
reviewer's name.

Reviews count by when the reviewer wrote them, in [start, end) (reputation_review_created_idx: organization,
review_created_at).
"""

from django.db.models import Avg, Count, Q

from apps.reputation.models import Review


def review_summary(*, organization, start, end, location_id=None) -> dict:
    """count, average_rating (None without reviews), responded (the review has a reply: imported from the provider
    or written here), stars_1 … stars_5 (the distribution)."""
    rows = Review.objects.for_org(organization).filter(review_created_at__gte=start, review_created_at__lt=end)
    if location_id is not None:
        rows = rows.filter(location_id=location_id)
    stars = {f"stars_{n}": Count("id", filter=Q(rating=n)) for n in range(1, 6)}
    return rows.aggregate(
        count=Count("id"),
        average_rating=Avg("rating"),
        responded=Count("id", filter=~Q(reply_comment="")),
        **stars,
    )
