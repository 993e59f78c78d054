"""Treatments (the catalogue journeys aim at), pipelines of ordered stages, and journeys."""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower

from apps.core.models import TenantModel

GENERAL_ENQUIRY = "General enquiry"


class Treatment(TenantModel):
    """One entry of the practice's treatment catalogue. Archiving (active = false) keeps it readable and keeps the
    journeys aimed at it; it only leaves the default list and cannot be picked for new journeys."""

    name = models.CharField(max_length=120)
    category = models.CharField(max_length=80, blank=True, default="")
    default_value = models.DecimalField(max_digits=12, decimal_places=2, default=Decimal("0"))
    currency = models.CharField(max_length=3, default="EUR", help_text="ISO 4217")
    active = models.BooleanField(default=True)
    # How long an appointment for it usually takes: scheduling offers slots of this length.
    duration_minutes = models.PositiveSmallIntegerField(default=30)
    # The practice's "General enquiry": seeded once, never archived (journeys without a specific treatment use it).
    is_builtin = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(F("organization"), Lower("name"), name="journeys_treatment_org_name_ci_unique"),
            models.UniqueConstraint(
                fields=["organization"], condition=Q(is_builtin=True), name="journeys_treatment_one_builtin"
            ),
            models.CheckConstraint(condition=Q(default_value__gte=0), name="journeys_treatment_value_not_negative"),
            models.CheckConstraint(
                condition=Q(duration_minutes__gte=5, duration_minutes__lte=720),
                name="journeys_treatment_duration_range",
            ),
        ]
        indexes = [models.Index(F("organization"), Lower("name"), F("id"), name="journeys_treat_name_idx")]

    def __str__(self) -> str:
        return self.name


class StageKind(models.TextChoices):
    OPEN = "open"
    WON = "won"
    LOST = "lost"


DEFAULT_PIPELINE_NAME = "Treatment pipeline"
DEFAULT_STAGES = (
    ("New lead", StageKind.OPEN),
    ("Contacted", StageKind.OPEN),
    ("Consultation booked", StageKind.OPEN),
    ("Consultation attended", StageKind.OPEN),
    ("Plan presented", StageKind.OPEN),
    ("Won", StageKind.WON),
    ("Lost", StageKind.LOST),
)


class Pipeline(TenantModel):
    """An ordered list of stages journeys move through. One per practice is the default (seeded on first use)."""

    name = models.CharField(max_length=120)
    is_default = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(F("organization"), Lower("name"), name="journeys_pipeline_org_name_ci_unique"),
            models.UniqueConstraint(
                fields=["organization"], condition=Q(is_default=True), name="journeys_pipeline_one_default"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Stage(TenantModel):
    """A step of a pipeline. Exactly one won and one lost stage per pipeline (never archived), at least one active
    open stage. Archiving keeps the stage and the journeys on it; only new moves into it are refused."""

    pipeline = models.ForeignKey(Pipeline, on_delete=models.CASCADE, related_name="stages")
    name = models.CharField(max_length=80)
    kind = models.CharField(max_length=8, choices=StageKind.choices, default=StageKind.OPEN)
    position = models.PositiveIntegerField()
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Deferred, so a reorder can renumber every stage in one transaction.
            models.UniqueConstraint(
                fields=["organization", "pipeline", "position"],
                name="journeys_stage_position_unique",
                deferrable=models.Deferrable.DEFERRED,
            ),
            models.UniqueConstraint(
                fields=["organization", "pipeline", "kind"],
                condition=Q(kind__in=[StageKind.WON, StageKind.LOST]),
                name="journeys_stage_one_won_one_lost",
            ),
            models.UniqueConstraint(
                F("organization"), F("pipeline"), Lower("name"), name="journeys_stage_name_ci_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class JourneyStatus(models.TextChoices):
    OPEN = "open"
    WON = "won"
    LOST = "lost"


class Journey(TenantModel):
    """A patient's way toward one treatment through one pipeline. At most one open journey per patient and
    treatment (partial unique index). Stage and status change only through the move/win/lose/reopen services."""

    patient = models.ForeignKey("patients.Patient", on_delete=models.CASCADE, related_name="+")
    treatment = models.ForeignKey(Treatment, on_delete=models.PROTECT, related_name="+")
    pipeline = models.ForeignKey(Pipeline, on_delete=models.PROTECT, related_name="+")
    stage = models.ForeignKey(Stage, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=8, choices=JourneyStatus.choices, default=JourneyStatus.OPEN)
    estimated_value = models.DecimalField(max_digits=12, decimal_places=2, default=Decimal("0"))
    currency = models.CharField(max_length=3, default="EUR")
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source = models.CharField(max_length=80, blank=True, default="")
    lost_reason = models.CharField(max_length=500, blank=True, default="")
    # Where a reopened journey goes back to: the open stage it left when it was won or lost.
    last_open_stage = models.ForeignKey(Stage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    stage_entered_at = models.DateTimeField()
    won_at = models.DateTimeField(null=True, blank=True)
    lost_at = models.DateTimeField(null=True, blank=True)
    reopened_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "patient", "treatment"],
                condition=Q(status="open"),
                name="journeys_journey_one_open",
            ),
            models.CheckConstraint(condition=Q(estimated_value__gte=0), name="journeys_journey_value_not_negative"),
        ]
        indexes = [
            models.Index(F("organization"), F("created_at").desc(), F("id").desc(), name="journeys_org_created_idx"),
            models.Index(fields=["organization", "pipeline", "stage", "status"], name="journeys_board_idx"),
            # A board column's most recently moved journeys: read in index order, stopping at the column's size.
            models.Index(
                F("organization"),
                F("stage"),
                F("stage_entered_at").desc(),
                F("id").desc(),
                name="journeys_stage_recent_idx",
            ),
            # Journeys needing action: the open ones, longest in their stage first.
            models.Index(
                F("organization"),
                F("stage_entered_at"),
                F("id"),
                condition=Q(status="open"),
                name="journeys_open_waiting_idx",
            ),
            models.Index(fields=["organization", "patient"], name="journeys_patient_idx"),
            models.Index(fields=["organization", "assignee", "status"], name="journeys_assignee_idx"),
            # Reports (apps.reports): journeys won or lost in a date range.
            models.Index(fields=["organization", "won_at"], condition=Q(status="won"), name="journeys_won_idx"),
            models.Index(fields=["organization", "lost_at"], condition=Q(status="lost"), name="journeys_lost_idx"),
        ]
