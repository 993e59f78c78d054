"""Reads of the journeys area, always for one practice."""

from decimal import Decimal

from django.db.models import Count, Prefetch, Sum
from django.db.models.functions import Lower

from apps.core.statements import CompiledRead
from apps.journeys import services
from apps.journeys.models import Journey, Pipeline, Stage, Treatment


def treatment_page(*, organization, include_archived: bool, category: str | None, limit: int, offset: int):
    """(rows, total) of the catalogue ordered by name; seeds the built-in treatment on first read."""
    services.practice_catalogue_seed(organization=organization)
    rows = Treatment.objects.for_org(organization)
    if not include_archived:
        rows = rows.filter(active=True)
    if category:
        rows = rows.filter(category__iexact=category)
    total = rows.count()
    return list(rows.order_by(Lower("name"), "id")[offset : offset + limit]), total


def _with_stages(pipelines):
    return pipelines.prefetch_related(
        Prefetch("stages", queryset=Stage.unscoped_objects.order_by("position", "id"), to_attr="ordered_stages")
    )


def pipeline_list(*, organization) -> list[Pipeline]:
    """Every pipeline of the practice with its stages (archived ones included, flagged); the default first.
    Seeds the default pipeline on first read."""
    services.practice_catalogue_seed(organization=organization)
    rows = Pipeline.objects.for_org(organization).order_by("-is_default", Lower("name"), "id")
    return list(_with_stages(rows))


def pipeline_get(*, organization, pipeline_id) -> Pipeline | None:
    return _with_stages(Pipeline.objects.for_org(organization).filter(id=pipeline_id)).first()


JOURNEY_RELATED = ("treatment", "stage", "patient")
# What a journey row shows of its relations (JourneySerializer): the patient table is wide (address, notes, search
# columns), and loading whole rows for a board or a list costs more than the query.
JOURNEY_ROW = (
    *(field.name for field in Journey._meta.concrete_fields),
    "patient__first_name",
    "patient__last_name",
    "treatment__name",
    "stage__name",
    "stage__kind",
    "stage__archived_at",
)


# The columns a journey row is rendered from (apps.journeys.renderers.journey_row), read with .values(): the same
# single joined statement as journey_rows, without building four model instances per row.
JOURNEY_VALUES = (
    "id",
    "patient_id",
    "treatment_id",
    "pipeline_id",
    "stage_id",
    "status",
    "estimated_value",
    "currency",
    "assignee_id",
    "source",
    "lost_reason",
    "stage_entered_at",
    "won_at",
    "lost_at",
    "reopened_at",
    "created_at",
    "updated_at",
    "patient__first_name",
    "patient__last_name",
    "treatment__name",
    "stage__name",
    "stage__kind",
    "stage__archived_at",
)


def journey_values(queryset):
    """The queryset as value rows of JOURNEY_VALUES (one joined query, like journey_rows)."""
    return queryset.values(*JOURNEY_VALUES)


def journey_rows(queryset):
    """The queryset with just what a journey row renders of its patient, treatment and stage, in one query."""
    return queryset.select_related(*JOURNEY_RELATED).only(*JOURNEY_ROW)


def journey_get(*, organization, journey_id) -> Journey | None:
    return journey_rows(Journey.objects.for_org(organization)).filter(id=journey_id).first()


def journeys_of_patient(*, organization, patient_id, limit: int) -> list[Journey]:
    """The patient's journeys, newest first, at most `limit`, with what the journey serializer renders (one query)."""
    rows = journey_rows(Journey.objects.for_org(organization).filter(patient_id=patient_id))
    return list(rows.order_by("-created_at", "-id")[:limit])


def journey_filter(*, organization, filters: dict):
    rows = Journey.objects.for_org(organization)
    for key, lookup in (
        ("pipeline_id", "pipeline_id"),
        ("stage_id", "stage_id"),
        ("status", "status"),
        ("assignee_id", "assignee_id"),
        ("treatment_id", "treatment_id"),
        ("patient_id", "patient_id"),
        ("created_after", "created_at__gte"),
        ("created_before", "created_at__lt"),
        ("updated_after", "updated_at__gte"),
        ("updated_before", "updated_at__lt"),
        ("won_after", "won_at__gte"),
        ("won_before", "won_at__lt"),
        ("lost_after", "lost_at__gte"),
        ("lost_before", "lost_at__lt"),
    ):
        if filters.get(key) is not None:
            rows = rows.filter(**{lookup: filters[key]})
    return rows


def journey_page(*, organization, filters: dict, limit: int, offset: int):
    """(rows, total), newest first."""
    rows = journey_filter(organization=organization, filters=filters)
    total = rows.count()
    page = journey_rows(rows).order_by("-created_at", "-id")[offset : offset + limit]
    return list(page), total


def journey_board(*, organization, pipeline: Pipeline, filters: dict, per_stage: int):
    """Columns in board order: every active stage, plus archived stages still holding journeys; each with the count
    and value sum of its journeys (under the filters) and the most recently moved `per_stage` of them, as value rows
    of JOURNEY_VALUES (apps.journeys.renderers.journey_row renders them)."""
    rows = journey_filter(organization=organization, filters={**filters, "pipeline_id": pipeline.id})
    # Unfiltered (the usual board), the same statements run from SQL compiled once (apps.core.statements).
    plain = all(value is None for value in filters.values())
    organization_id = getattr(organization, "pk", organization)
    if plain:
        found = _BOARD_TOTALS.dicts((), organization_id, pipeline.id)
    else:
        found = rows.values("stage_id").annotate(count=Count("id"), value_sum=Sum("estimated_value"))
    totals = {row["stage_id"]: row for row in found}
    stages = [
        stage
        for stage in Stage.objects.for_org(organization).filter(pipeline=pipeline).order_by("position", "id")
        if stage.archived_at is None or stage.id in totals
    ]
    columns = []
    for stage in stages:
        found = totals.get(stage.id) or {"count": 0, "value_sum": None}
        items = []
        if found["count"] and per_stage and plain:
            items = _BOARD_COLUMN.dicts((per_stage,), organization_id, pipeline.id, stage.id)
        elif found["count"] and per_stage:
            items = list(_column(rows, stage.id)[:per_stage])
        columns.append(
            {"stage": stage, "count": found["count"], "value_sum": found["value_sum"] or Decimal("0"), "items": items}
        )
    return columns


def _column(rows, stage_id):
    """A board column's journeys, most recently moved first, as value rows."""
    return journey_values(rows.filter(stage=stage_id).order_by("-stage_entered_at", "-id"))


def _plain_rows(organization_id, pipeline_id):
    return journey_filter(organization=organization_id, filters={"pipeline_id": pipeline_id})


_BOARD_TOTALS = CompiledRead(
    lambda organization_id, pipeline_id: (
        _plain_rows(organization_id, pipeline_id)
        .values("stage_id")
        .annotate(count=Count("id"), value_sum=Sum("estimated_value"))
    ),
    placeholders=2,
)
_BOARD_COLUMN = CompiledRead(
    lambda organization_id, pipeline_id, stage_id, per_stage: _column(
        _plain_rows(organization_id, pipeline_id), stage_id
    )[:per_stage],
    placeholders=3,
)
