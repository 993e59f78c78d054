import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models


class AuditEntry(models.Model):
    """One recorded write (or bulk read of practice data, such as an export download): who, what, when, from where.

    Append-only: a database trigger (migration 0001) refuses UPDATE and DELETE unless the retention purge sets
    `audit.purge` for its own transaction. The practice and the person are plain ids, not foreign keys, so the entry
    outlives a closed practice or a removed person for its whole retention period and nothing ever rewrites it.
    Values are never stored: of a change, only the names of the fields it touched.
    """

    class Source(models.TextChoices):
        API = "api"  # a REST call (session, API key or OAuth token; MCP tool calls come in as OAuth)
        ADMIN = "admin"  # the Django admin back office
        COMMAND = "command"  # a management command
        SYSTEM = "system"  # background work on someone's behalf (an export produced, an account closed)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=False)
    organization_id = models.UUIDField(null=True, blank=True)  # None: a platform-level write (admin, command)
    source = models.CharField(max_length=8, choices=Source.choices)
    # Who: the person (None for an unattended command or system work), how they came in, and with what.
    user_id = models.UUIDField(null=True, blank=True)
    credential_kind = models.CharField(max_length=16, blank=True, default="")  # session, api_key, oauth, admin, …
    credential_id = models.CharField(max_length=64, blank=True, default="")  # API key id or OAuth connection id
    oauth_client_id = models.CharField(max_length=100, blank=True, default="")
    # What: the route pattern (ids as {id}) or command name, the action and its subject.
    method = models.CharField(max_length=8, blank=True, default="")
    route = models.CharField(max_length=200, blank=True, default="")
    action = models.CharField(max_length=64)
    subject_type = models.CharField(max_length=64, blank=True, default="")
    subject_id = models.CharField(max_length=64, blank=True, default="")
    fields = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    # A management command's writes: model label → rows saved or deleted ({"patients.patient": 3}); counts only.
    written = models.JSONField(default=dict, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    # From where: the caller's address block (/24 for IPv4, /48 for IPv6), never the full address.
    address_block = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(
                models.F("organization_id"), models.F("created_at").desc(), models.F("id").desc(), name="audit_org_idx"
            ),
            models.Index(fields=["organization_id", "subject_type", "subject_id"], name="audit_org_subject_idx"),
            models.Index(fields=["created_at"], name="audit_created_idx"),  # the retention purge
        ]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.source} {self.action} {self.subject_type}:{self.subject_id}"
