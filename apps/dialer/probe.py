"""The failover probe (POST /webhooks/telephony/{token}/failover-probe): the telephony provider's failover service
asks whether this region can take its callbacks. 200 {"status": "ok"} only when a database query (the routing
token's lookup) and the media storage ("r2": the bucket recordings go to) both answer; otherwise 503
{"status": "unavailable", "dependency": "database" | "r2"}. The storage check writes a small probe object through
Django's storage API, reads it back and deletes it."""

import logging
import secrets

from django.core.files.base import ContentFile

from apps.dialer.recordings import media_storage

logger = logging.getLogger("apps.dialer")


def storage_answers() -> bool:
    marker = secrets.token_hex(16)
    try:
        storage = media_storage()
        name = storage.save(f"dialer/failover-probe/{marker}", ContentFile(marker.encode()))
        try:
            with storage.open(name, "rb") as handle:
                read = handle.read()
        finally:
            storage.delete(name)
    except Exception as exc:  # any failure of the store means it does not answer; the detail stays in our logs
        logger.warning("failover probe: storage check failed (%s)", type(exc).__name__)
        return False
    return read == marker.encode()
