"""Reads of the reputation area (one practice each)."""

from django.db.models import Q

from apps.reputation.models import Feedback, Review, ReviewRequest, ReviewSource


def _page(rows, limit: int, offset: int):
    return list(rows[offset : offset + limit]), rows.count()


def sources_page(*, organization, location_id=None, limit: int, offset: int):
    rows = ReviewSource.objects.for_org(organization).order_by("-created_at", "-id")
    if location_id:
        rows = rows.filter(location_id=location_id)
    return _page(rows, limit, offset)


def reviews_page(*, organization, location_id=None, rating=None, replied=None, limit: int, offset: int):
    """Newest first (the platform's updateTime, then id)."""
    rows = Review.objects.for_org(organization).order_by("-review_updated_at", "-id")
    if location_id:
        rows = rows.filter(location_id=location_id)
    if rating:
        rows = rows.filter(rating=rating)
    if replied is not None:
        has_reply = ~Q(reply_comment="")
        rows = rows.filter(has_reply) if replied else rows.exclude(has_reply)
    return _page(rows, limit, offset)


def requests_page(*, organization, patient_id=None, status=None, limit: int, offset: int):
    rows = ReviewRequest.objects.for_org(organization).order_by("-created_at", "-id")
    if patient_id:
        rows = rows.filter(patient_id=patient_id)
    if status:
        rows = rows.filter(status=status)
    return _page(rows, limit, offset)


def feedback_page(*, organization, location_id=None, patient_id=None, limit: int, offset: int):
    rows = Feedback.objects.for_org(organization).order_by("-created_at", "-id")
    if location_id:
        rows = rows.filter(location_id=location_id)
    if patient_id:
        rows = rows.filter(patient_id=patient_id)
    return _page(rows, limit, offset)
