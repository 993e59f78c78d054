"""The social platform's signed deauthorize and data-deletion callbacks.

Both name a person by the platform's app-scoped user id (`user_id` in the signed_request payload): the person who
granted page tokens to this service. Deauthorize disconnects every connection that person authorized (page token
wiped, lead_ad_connection.health_changed emitted). Data deletion does the same and erases the lead data received
through those connections: each submission's answers, click id and lead ids, and the raw intake bodies that carried
them. Patients already made from those leads stay: they are the practice's own records, erased through the
practice's own right-to-erasure route. The request is answered with a tracker URL on this region's API and a
confirmation code; the tracker answers this region's status. Both callbacks are posted on to the peer region
(apps.leadads.peer) after the answer, so the person's data is erased in both regions."""

import hashlib
import logging
import secrets

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.events.services import Actor
from apps.leadads.models import (
    DataDeletionRequest,
    LeadAdConnection,
    LeadAdSubmission,
    LeadIntake,
    Platform,
)
from apps.leadads.services import disconnect

logger = logging.getLogger("apps.leadads")

TRACKER_PATH = "/webhooks/lead-ads/meta-platform/data-deletion/{code}"


def _authorized_by(user_ref: str):
    return (
        LeadAdConnection.objects.unscoped()
        .select_for_update()
        .filter(platform=Platform.META_PLATFORM, authorized_by_ref=user_ref)
        .order_by("id")
    )


@transaction.atomic
def deauthorize(*, user_ref: str) -> int:
    """The person removed the app: their connections are disconnected. Returns how many were."""
    done = 0
    for connection in _authorized_by(user_ref):
        done += disconnect(
            connection, actor=Actor("provider", Platform.META_PLATFORM), reason="deauthorized on the platform"
        )
    return done


def tracker_url(code: str) -> str:
    return settings.SVC_BASE_URL + TRACKER_PATH.format(code=code)


@transaction.atomic
def data_deletion(*, user_ref: str, forward: bool) -> DataDeletionRequest:
    """Erase the person's lead data here (see the module docstring) and record the request for its tracker."""
    connections = list(_authorized_by(user_ref))
    for connection in connections:
        disconnect(connection, actor=Actor("provider", Platform.META_PLATFORM), reason="data deletion requested")
        if connection.authorized_by_ref:
            connection.authorized_by_ref = ""
            connection.save(update_fields=["authorized_by_ref", "updated_at"])
    ids = [c.id for c in connections]
    now = timezone.now()
    submissions = LeadAdSubmission.objects.unscoped().filter(connection_id__in=ids, erased_at__isnull=True)
    intake_ids = set(submissions.exclude(intake_id=None).values_list("intake_id", flat=True))
    erased = submissions.update(fields={}, click_id="", lead_ref=_erased_ref(), erased_at=now, updated_at=now)
    LeadIntake.objects.filter(id__in=intake_ids).update(raw_encrypted="", erased_at=now, updated_at=now)
    request = DataDeletionRequest.objects.create(
        confirmation_code=secrets.token_hex(10),
        person_digest=hashlib.sha256(user_ref.encode()).hexdigest(),
        region=settings.SVC_REGION,
        connections_erased=len(connections),
        submissions_erased=erased,
        peer_status="forwarding" if forward else "",
        completed_at=now,
    )
    return request


def _erased_ref():
    """Erased submissions keep a row (their outcome and patient link) but no longer the platform's lead id."""
    from django.db.models import CharField, Value
    from django.db.models.functions import Concat

    return Concat(Value("erased:"), "id", output_field=CharField())


def tracker(code: str) -> DataDeletionRequest | None:
    if not code or len(code) > 40 or not code.isalnum():
        return None
    return DataDeletionRequest.objects.filter(confirmation_code=code).first()
