"""Treatment plans and what they are built from.

- Procedure: a practice's procedure catalogue (code, name, category, default fee in integer minor units of the
  practice's currency, whether it needs a tooth and surfaces). Seeded with a starter set on first read; archived,
  never deleted (plan items point at it).
- Fee: a procedure's fee on one price list (apps.patients PriceList); a patient's default price list picks it.
- TreatmentPlan: one patient's plan. Its title and notes are clinical free text, kept only encrypted at rest
  (apps.core.crypto) in `content_encrypted`; the status moves proposed → accepted → in_progress → completed, or
  to declined / cancelled (apps.plans.rules).
- PlanItem: one procedure on a plan, with tooth (FDI), surfaces, quantity, phase number and the unit fee fixed when
  the item was added (a later fee change never rewrites it; issue 25 charges completed items at this fee).
- TreatmentTemplate / TemplateItem: a named list of procedures with optional phases, applied to a plan.

Totals are never stored: they are computed in SQL from the items (apps.plans.selectors).
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower

from apps.core.models import TenantModel


class Category(models.TextChoices):
    DIAGNOSTIC = "diagnostic"
    PREVENTIVE = "preventive"
    RESTORATIVE = "restorative"
    ENDODONTIC = "endodontic"
    PERIODONTAL = "periodontal"
    PROSTHODONTIC = "prosthodontic"
    SURGICAL = "surgical"
    ORTHODONTIC = "orthodontic"
    IMPLANT = "implant"
    OTHER = "other"


class PlanStatus(models.TextChoices):
    PROPOSED = "proposed"
    ACCEPTED = "accepted"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    DECLINED = "declined"
    CANCELLED = "cancelled"


class ItemStatus(models.TextChoices):
    PLANNED = "planned"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class FeeSource(models.TextChoices):
    PRICE_LIST = "price_list"
    DEFAULT = "default"
    MANUAL = "manual"


class Procedure(TenantModel):
    code = models.CharField(max_length=16)
    name = models.CharField(max_length=120)
    category = models.CharField(max_length=16, choices=Category.choices, default=Category.OTHER)
    default_fee = models.BigIntegerField(help_text="Integer minor units of `currency`.")
    currency = models.CharField(max_length=3, help_text="ISO 4217; the practice's currency when written.")
    tooth_required = models.BooleanField(default=False)
    surfaces_required = models.BooleanField(default=False)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("code",)
        constraints = [
            models.UniqueConstraint(F("organization"), Lower("code"), name="plans_procedure_org_code_unique"),
            models.CheckConstraint(condition=Q(default_fee__gte=0), name="plans_procedure_fee_not_negative"),
            models.CheckConstraint(
                condition=Q(surfaces_required=False) | Q(tooth_required=True),
                name="plans_procedure_surfaces_need_tooth",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


class Fee(TenantModel):
    price_list = models.ForeignKey("patients.PriceList", on_delete=models.CASCADE, related_name="+")
    procedure = models.ForeignKey(Procedure, on_delete=models.CASCADE, related_name="fees")
    amount = models.BigIntegerField(help_text="Integer minor units of `currency`.")
    currency = models.CharField(max_length=3)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "price_list", "procedure"], name="plans_fee_price_list_procedure_unique"
            ),
            models.CheckConstraint(condition=Q(amount__gte=0), name="plans_fee_amount_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.procedure_id} on {self.price_list_id}: {self.amount} {self.currency}"


class TreatmentPlan(TenantModel):
    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=16, choices=PlanStatus.choices, default=PlanStatus.PROPOSED)
    currency = models.CharField(max_length=3, help_text="ISO 4217, fixed when the plan is created.")
    practitioner = models.ForeignKey(
        "patients.Practitioner", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # {"title": ..., "notes": ...} as encrypted JSON (apps.core.crypto): clinical free text.
    content_encrypted = models.TextField(blank=True, default="")
    status_changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "patient", "created_at"], name="plans_plan_patient_idx")]

    def __str__(self) -> str:
        return f"treatment plan {self.id} ({self.status})"


class PlanItem(TenantModel):
    plan = models.ForeignKey(TreatmentPlan, on_delete=models.CASCADE, related_name="items")
    procedure = models.ForeignKey(Procedure, on_delete=models.PROTECT, related_name="+")
    tooth = models.PositiveSmallIntegerField(null=True, blank=True, help_text="FDI notation (11-48, 51-85).")
    surfaces = models.CharField(max_length=6, blank=True, default="", help_text="Letters of MODBLI, in that order.")
    quantity = models.PositiveSmallIntegerField(default=1)
    phase = models.PositiveSmallIntegerField(default=1)
    fee = models.BigIntegerField(help_text="Unit fee in minor units of the plan's currency, fixed when added.")
    fee_source = models.CharField(max_length=16, choices=FeeSource.choices)
    practitioner = models.ForeignKey(
        "patients.Practitioner", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=16, choices=ItemStatus.choices, default=ItemStatus.PLANNED)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "plan", "phase", "created_at"], name="plans_item_plan_idx")]
        constraints = [
            models.CheckConstraint(condition=Q(fee__gte=0), name="plans_item_fee_not_negative"),
            models.CheckConstraint(condition=Q(quantity__gte=1), name="plans_item_quantity_positive"),
            models.CheckConstraint(condition=Q(phase__gte=1), name="plans_item_phase_positive"),
        ]

    def __str__(self) -> str:
        return f"item {self.id} of plan {self.plan_id}"


class TreatmentTemplate(TenantModel):
    name = models.CharField(max_length=120)

    class Meta:
        constraints = [
            models.UniqueConstraint(F("organization"), Lower("name"), name="plans_template_org_name_unique"),
        ]

    def __str__(self) -> str:
        return self.name


class TemplateItem(TenantModel):
    template = models.ForeignKey(TreatmentTemplate, on_delete=models.CASCADE, related_name="items")
    procedure = models.ForeignKey(Procedure, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()
    phase = models.PositiveSmallIntegerField(default=1)
    quantity = models.PositiveSmallIntegerField(default=1)
    surfaces = models.CharField(max_length=6, blank=True, default="")

    class Meta:
        ordering = ("position",)
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "template", "position"], name="plans_template_item_position_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.position} of template {self.template_id}"
