"""The tenant base model and its scoped manager.

Every tenant-owned row carries its organization, and the only way our code queries tenant rows is
`Model.objects.for_org(org)`. A sweep that really needs every organization spells out `.objects.unscoped()`.
"""

import uuid

from django.db import models


class TenantScopeRequired(RuntimeError):
    """Raised when tenant data is queried without naming the organization."""


class TenantQuerySet(models.QuerySet):
    pass


class TenantManager(models.Manager.from_queryset(TenantQuerySet)):
    def for_org(self, organization) -> TenantQuerySet:
        organization_id = getattr(organization, "pk", organization)
        if organization_id is None:
            raise TenantScopeRequired(f"{self.model.__name__}: organization is required")
        return super().get_queryset().filter(organization_id=organization_id)

    # Inserts name their organization on every row, so they need no scope of their own.
    def create(self, **fields):
        if fields.get("organization") is None and fields.get("organization_id") is None:
            raise TenantScopeRequired(f"{self.model.__name__}: a new row needs its organization")
        return super().get_queryset().create(**fields)

    def bulk_create(self, objs, **kwargs):
        objs = list(objs)
        if any(obj.organization_id is None for obj in objs):
            raise TenantScopeRequired(f"{self.model.__name__}: every new row needs its organization")
        return super().get_queryset().bulk_create(objs, **kwargs)

    def unscoped(self) -> TenantQuerySet:
        return super().get_queryset()

    def get_queryset(self) -> TenantQuerySet:
        raise TenantScopeRequired(
            f"{self.model.__name__}.objects needs an organization: use .for_org(org) (or .unscoped() for sweeps)"
        )


class TenantModel(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("accounts.Organization", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Django's own machinery (admin forms, model formsets, related managers, the deletion collector) uses the
    # first-declared manager; it is plain so that machinery keeps working. Our code uses `objects` only, which
    # refuses to run without an organization.
    unscoped_objects = models.Manager()
    objects = TenantManager()

    class Meta:
        abstract = True
