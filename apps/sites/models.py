"""Practice websites: the public site key their pages use to read the form configuration and to report the forms
they carry (form discovery), the capture forms the site uses, and the discovery review list."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F

from apps.core.models import TenantModel

MAX_PAGE_URL = 2048
MAX_FORM_KEY = 200


class Website(TenantModel):
    """A practice website. The site key is public (it sits in the site's pages) but unguessable; it only reads the
    form configuration and files form-discovery reports, whose page and Origin hosts are pinned to allowed_domains."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        ARCHIVED = "archived"

    name = models.CharField(max_length=200)
    site_key = models.CharField(max_length=64, unique=True)
    # Hostnames (lower case, IDNA): a report's page host must be one of them or a subdomain of one.
    allowed_domains = ArrayField(models.CharField(max_length=253), default=list, blank=True)
    forms = models.ManyToManyField("capture.CaptureForm", through="WebsiteForm", related_name="websites", blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACTIVE)
    archived_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        indexes = [models.Index(F("organization"), F("created_at").desc(), F("id").desc(), name="site_org_idx")]

    def __str__(self) -> str:
        return self.name


class WebsiteForm(TenantModel):
    """A capture form a website's pages use (the M2M row, kept in the practice like every child)."""

    website = models.ForeignKey(Website, on_delete=models.CASCADE, related_name="form_links")
    form = models.ForeignKey("capture.CaptureForm", on_delete=models.CASCADE, related_name="website_links")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "website", "form"], name="site_form_unique"),
        ]
        indexes = [models.Index(fields=["organization", "form"], name="site_form_form_idx")]


class FormDiscovery(TenantModel):
    """A form a website's page reported having. One row per (website, page, form key): a repeated report updates
    last_seen_at, times_seen and the field list. page_url is kept normalized (no fragment, no marketing parameters);
    the uniqueness is on its digest, as a 2048-character URL does not fit a B-tree index entry safely."""

    class Status(models.TextChoices):
        NEW = "new"
        LINKED = "linked"
        DISMISSED = "dismissed"

    website = models.ForeignKey(Website, on_delete=models.CASCADE, related_name="discoveries")
    page_url = models.CharField(max_length=MAX_PAGE_URL)
    page_digest = models.CharField(max_length=64)
    form_key = models.CharField(max_length=MAX_FORM_KEY)
    # [{"name", "type", "label"}], as the page reported them.
    fields = models.JSONField(default=list)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.NEW)
    linked_form = models.ForeignKey(
        "capture.CaptureForm", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    times_seen = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "website", "page_digest", "form_key"], name="site_discovery_unique"
            ),
        ]
        indexes = [
            models.Index(
                F("organization"),
                F("website"),
                F("status"),
                F("last_seen_at").desc(),
                F("id").desc(),
                name="site_discovery_list_idx",
            ),
        ]
