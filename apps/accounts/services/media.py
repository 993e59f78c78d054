"""Pictures people upload (their avatar, their practice's logo): checked from their bytes, kept through Django's
storage API (SVC_MEDIA_STORAGE_ALIAS, the filesystem or an S3-compatible bucket), described by a StoredImage row.

The type is read from the magic numbers at the start of the bytes, never from a file name or a Content-Type. The
stored name is derived from the owner and the SHA-256 of the bytes (never the uploader's file name); the SHA-256 is
also the ETag. A replaced or removed file is deleted from storage once the transaction that let go of it commits.
"""

import hashlib
import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import models, transaction

from apps.accounts.models import Organization, StoredImage, User
from apps.core.errors import ApiError, NotFound, PayloadTooLarge, ServiceUnavailable

logger = logging.getLogger(__name__)

MAX_IMAGE_BYTES = 5 * 1024 * 1024

JPEG, PNG, WEBP, GIF = "image/jpeg", "image/png", "image/webp", "image/gif"
_LABELS = {JPEG: "JPEG", PNG: "PNG", WEBP: "WebP", GIF: "GIF"}
_EXTENSIONS = {JPEG: ".jpg", PNG: ".png", WEBP: ".webp", GIF: ".gif"}


class UnsupportedImageType(ApiError):
    status_code = 400
    code = "UNSUPPORTED_IMAGE_TYPE"


class ImageStorageUnavailable(ServiceUnavailable):
    code = "IMAGE_STORAGE_UNAVAILABLE"
    message = "The image store cannot be reached; retry shortly."


def sniff_image_type(data: bytes) -> str | None:
    """The image type its first bytes announce (JPEG, PNG, WebP, GIF), or None."""
    if data.startswith(b"\xff\xd8\xff"):
        return JPEG
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if data.startswith((b"GIF87a", b"GIF89a")):
        return GIF
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return WEBP
    return None


@dataclass(frozen=True)
class ImageRules:
    """What one kind of picture accepts and where it is kept."""

    folder: str
    types: tuple[str, ...]
    max_bytes: int = MAX_IMAGE_BYTES

    @property
    def labels(self) -> str:
        names = [_LABELS[t] for t in self.types]
        return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]

    def check(self, data: bytes) -> str:
        """The content type of an acceptable picture; 413 over the size, 400 UNSUPPORTED_IMAGE_TYPE otherwise."""
        if len(data) > self.max_bytes:
            raise PayloadTooLarge(
                f"The image is larger than {self.max_bytes // (1024 * 1024)} MB.", details={"maxBytes": self.max_bytes}
            )
        content_type = sniff_image_type(data)
        if content_type not in self.types:
            raise UnsupportedImageType(
                f"The image must be {self.labels}.",
                details={"allowedTypes": list(self.types), "detectedType": content_type},
            )
        return content_type


AVATAR = ImageRules(folder="avatars", types=(JPEG, PNG, WEBP, GIF))
LOGO = ImageRules(folder="logos", types=(JPEG, PNG, WEBP))


def media_storage():
    return storages[settings.SVC_MEDIA_STORAGE_ALIAS]


def quoted_etag(image: StoredImage) -> str:
    return f'"{image.sha256}"'


def image_bytes(image: StoredImage) -> bytes:
    """The stored bytes. A file gone from storage is a 404; an unreachable store a 503 (never a 500)."""
    try:
        with media_storage().open(image.storage_name, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        logger.error("stored image %s is missing from storage", image.id)
        raise NotFound("The image is missing.") from None
    except Exception as exc:
        logger.warning("image storage read failed: %s", type(exc).__name__)
        raise ImageStorageUnavailable() from None


def _delete_file(name: str) -> None:
    try:
        media_storage().delete(name)
    except Exception as exc:  # a leftover file is harmless; the request has already succeeded
        logger.warning("could not delete stored image file %s: %s", name, type(exc).__name__)


def _save_file(name: str, data: bytes) -> str:
    try:
        return media_storage().save(name, ContentFile(data))
    except Exception as exc:
        logger.warning("image storage write failed: %s", type(exc).__name__)
        raise ImageStorageUnavailable() from None


def _replace(*, model: type[models.Model], pk, field: str, rules: ImageRules, data: bytes) -> StoredImage:
    content_type = rules.check(data)
    digest = hashlib.sha256(data).hexdigest()
    if model.objects.filter(pk=pk).values_list(f"{field}__sha256", flat=True).first() == digest:
        return getattr(model.objects.select_related(field).get(pk=pk), field)  # the same picture again
    # Written before the row lock is taken, so a slow store never holds it; dropped again if the swap fails.
    name = _save_file(f"{rules.folder}/{pk}/{digest}{_EXTENSIONS[content_type]}", data)
    try:
        with transaction.atomic():
            owner = model.objects.select_for_update().get(pk=pk)
            old = getattr(owner, field)
            if old is not None and old.sha256 == digest:  # the same picture won a race: keep it
                if old.storage_name != name:
                    transaction.on_commit(lambda: _delete_file(name))
                return old
            image = StoredImage.objects.create(
                storage_name=name, content_type=content_type, size=len(data), sha256=digest
            )
            setattr(owner, field, image)
            owner.save(update_fields=[field, "updated_at"])
            if old is not None:
                old.delete()
                if old.storage_name != name:
                    old_name = old.storage_name
                    transaction.on_commit(lambda: _delete_file(old_name))
            return image
    except Exception:
        _delete_file(name)
        raise


def _remove(*, model: type[models.Model], pk, field: str) -> bool:
    with transaction.atomic():
        owner = model.objects.select_for_update().get(pk=pk)
        old = getattr(owner, field)
        if old is None:
            return False
        setattr(owner, field, None)
        owner.save(update_fields=[field, "updated_at"])
        old.delete()
        transaction.on_commit(lambda: _delete_file(old.storage_name))
        return True


def avatar_replace(*, user: User, data: bytes) -> StoredImage:
    """Set the person's avatar (JPEG, PNG, WebP or GIF up to 5 MB); the previous file goes."""
    image = _replace(model=User, pk=user.pk, field="avatar", rules=AVATAR, data=data)
    user.avatar = image
    return image


def avatar_remove(*, user: User) -> None:
    if not _remove(model=User, pk=user.pk, field="avatar"):
        raise NotFound("You have no avatar.")
    user.avatar = None


def logo_replace(*, organization: Organization, data: bytes) -> StoredImage:
    """Set the practice's logo (JPEG, PNG or WebP up to 5 MB); the previous file goes."""
    image = _replace(model=Organization, pk=organization.pk, field="logo", rules=LOGO, data=data)
    organization.logo = image
    return image


def logo_remove(*, organization: Organization) -> None:
    if not _remove(model=Organization, pk=organization.pk, field="logo"):
        raise NotFound("The practice has no logo.")
    organization.logo = None
