"""Reads of the webhooks area: a practice's endpoints and their deliveries."""

from django.db.models import QuerySet

from apps.webhooks.models import WebhookDelivery, WebhookEndpoint

DELIVERY_FILTERS = ("status", "event_type", "kind")


def endpoints_of(*, organization, include_archived: bool = True) -> QuerySet[WebhookEndpoint]:
    """The practice's endpoints, oldest first; archived ones only when asked."""
    endpoints = WebhookEndpoint.objects.for_org(organization).order_by("created_at", "id")
    if not include_archived:
        endpoints = endpoints.filter(archived_at__isnull=True)
    return endpoints


def deliveries_of(*, organization, endpoint: WebhookEndpoint, filters: dict | None = None) -> QuerySet[WebhookDelivery]:
    """An endpoint's deliveries, narrowed by the given status, event_type and kind (falsy values are ignored)."""
    deliveries = WebhookDelivery.objects.for_org(organization).filter(endpoint=endpoint)
    for name in DELIVERY_FILTERS:
        if (filters or {}).get(name):
            deliveries = deliveries.filter(**{name: filters[name]})
    return deliveries
