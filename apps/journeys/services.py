"""Writes of the journeys area: the treatment catalogue, pipelines and their stages, journeys.

Keyword-only functions under transaction.atomic. Seeding (the built-in "General enquiry" treatment and the default
pipeline) is an explicit service that reads call on first use, never save() or a signal."""

from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.utils import timezone

from apps.core.errors import ValidationFailed
from apps.core.writes import save_unique
from apps.events.services import Actor, emit
from apps.journeys.errors import (
    DefaultPipelineRequired,
    JourneyAlreadyOpen,
    JourneyAlreadyOpenState,
    JourneyNotOpen,
    PipelineNameTaken,
    PipelineStagesInvalid,
    StageArchived,
    StageNameTaken,
    TreatmentArchived,
    TreatmentBuiltin,
    TreatmentNameTaken,
)
from apps.journeys.models import (
    DEFAULT_PIPELINE_NAME,
    DEFAULT_STAGES,
    GENERAL_ENQUIRY,
    Journey,
    JourneyStatus,
    Pipeline,
    Stage,
    StageKind,
    Treatment,
)
from apps.patients.public import Activity, PatientMerged, timeline_record

# --- seeding ------------------------------------------------------------------------------------------------------


def treatment_ensure_builtin(*, organization) -> Treatment:
    """The practice's built-in "General enquiry", created on first use. Safe under concurrency: the insert is
    ON CONFLICT DO NOTHING against the one-built-in-per-practice index. A practice that already named one of its
    own treatments "General enquiry" gets that one marked built-in instead."""
    treatments = Treatment.objects.for_org(organization)
    builtin = treatments.filter(is_builtin=True).first()
    if builtin is not None:
        return builtin
    with transaction.atomic():
        Treatment.objects.bulk_create(
            [Treatment(organization=organization, name=GENERAL_ENQUIRY, category="General", is_builtin=True)],
            ignore_conflicts=True,
        )
        builtin = treatments.filter(is_builtin=True).first()
        if builtin is None:  # the name was taken by one of the practice's own treatments
            treatments.annotate(lower_name=Lower("name")).filter(lower_name=GENERAL_ENQUIRY.lower()).update(
                is_builtin=True, active=True
            )
            builtin = treatments.get(is_builtin=True)
    return builtin


def practice_catalogue_seed(*, organization) -> None:
    """Everything a practice's journeys need before the first one: the built-in treatment (and the default
    pipeline). Idempotent; two cheap reads when already seeded."""
    treatment_ensure_builtin(organization=organization)
    pipeline_ensure_default(organization=organization)


def pipeline_ensure_default(*, organization) -> Pipeline:
    """The practice's default pipeline, seeded with the standard stages on first use. Concurrent first uses create
    one: the insert is ON CONFLICT DO NOTHING against the one-default-per-practice index, and only the transaction
    whose row landed adds the stages (the others wait on the index, then read the committed winner)."""
    pipelines = Pipeline.objects.for_org(organization)
    default = pipelines.filter(is_default=True).first()
    if default is not None:
        return default
    with transaction.atomic():
        candidate = Pipeline(organization=organization, name=DEFAULT_PIPELINE_NAME, is_default=True)
        Pipeline.objects.bulk_create([candidate], ignore_conflicts=True)
        default = pipelines.filter(is_default=True).first()
        if default is None:  # the seed name is taken by one of the practice's own pipelines: promote the oldest
            default = pipelines.order_by("created_at", "id").first()
            pipelines.filter(id=default.id).update(is_default=True)
            default.is_default = True
        elif default.id == candidate.id:
            _create_stages(pipeline=default, stages=DEFAULT_STAGES)
    return default


def _create_stages(*, pipeline: Pipeline, stages) -> None:
    Stage.objects.bulk_create(
        Stage(organization_id=pipeline.organization_id, pipeline=pipeline, name=name, kind=kind, position=index)
        for index, (name, kind) in enumerate(stages)
    )


# --- treatments ---------------------------------------------------------------------------------------------------


def treatment_create(*, organization, data: dict) -> Treatment:
    practice_catalogue_seed(organization=organization)
    treatment = Treatment(organization=organization, **data)
    treatment.name = treatment.name.strip()
    return save_unique(treatment, TreatmentNameTaken)


def treatment_update(*, organization, treatment: Treatment, data: dict) -> Treatment:
    if treatment.is_builtin and data.get("active") is False:
        raise TreatmentBuiltin()
    for key, value in data.items():
        setattr(treatment, key, value.strip() if key == "name" else value)
    return save_unique(treatment, TreatmentNameTaken)


def treatment_archive(*, organization, treatment: Treatment) -> Treatment:
    if treatment.is_builtin:
        raise TreatmentBuiltin()
    if treatment.active:
        treatment.active = False
        treatment.save(update_fields=["active", "updated_at"])
    return treatment


# --- pipelines and stages -----------------------------------------------------------------------------------------


def _locked_pipeline(*, organization, pipeline: Pipeline) -> Pipeline:
    """Stage changes of one pipeline run one at a time: the won/lost/open rules are checked under this lock."""
    return Pipeline.objects.for_org(organization).select_for_update().get(id=pipeline.id)


def _renumber(stages: list[Stage]) -> None:
    """Positions 0..n-1 in this order (the position constraint is deferred until commit)."""
    changed = []
    for index, stage in enumerate(stages):
        if stage.position != index:
            stage.position = index
            changed.append(stage)
    if changed:
        Stage.objects.for_org(changed[0].organization_id).bulk_update(changed, ["position"])


def _ordered_stages(pipeline: Pipeline) -> list[Stage]:
    return list(Stage.objects.for_org(pipeline.organization_id).filter(pipeline=pipeline).order_by("position", "id"))


def _make_default(*, organization, pipeline: Pipeline) -> None:
    Pipeline.objects.for_org(organization).filter(is_default=True).exclude(id=pipeline.id).update(is_default=False)
    pipeline.is_default = True


@transaction.atomic
def pipeline_create(*, organization, name: str, stages=None, is_default: bool = False) -> Pipeline:
    """A new pipeline; `stages` is [(name, kind), …] already validated for shape, else the standard stages."""
    practice_catalogue_seed(organization=organization)
    pipeline = Pipeline(organization=organization, name=name.strip())
    if is_default:
        _make_default(organization=organization, pipeline=pipeline)
    save_unique(pipeline, PipelineNameTaken)
    _create_stages(pipeline=pipeline, stages=stages or DEFAULT_STAGES)
    return pipeline


@transaction.atomic
def pipeline_update(*, organization, pipeline: Pipeline, data: dict) -> Pipeline:
    pipeline = _locked_pipeline(organization=organization, pipeline=pipeline)
    if "is_default" in data:
        if data["is_default"]:
            _make_default(organization=organization, pipeline=pipeline)
        elif pipeline.is_default:
            raise DefaultPipelineRequired()
    if "name" in data:
        pipeline.name = data["name"].strip()
    return save_unique(pipeline, PipelineNameTaken)


@transaction.atomic
def stage_add(*, organization, pipeline: Pipeline, name: str, kind: str, position: int | None) -> Stage:
    """A new open stage; at `position` among the active stages, else just before the first won/lost stage."""
    pipeline = _locked_pipeline(organization=organization, pipeline=pipeline)
    if kind != StageKind.OPEN:
        raise PipelineStagesInvalid(details={"kind": kind})
    stages = _ordered_stages(pipeline)
    active = [stage for stage in stages if stage.archived_at is None]
    archived = [stage for stage in stages if stage.archived_at is not None]
    if position is None:
        position = next((i for i, stage in enumerate(active) if stage.kind != StageKind.OPEN), len(active))
    stage = Stage(organization=organization, pipeline=pipeline, name=name.strip(), kind=kind, position=len(stages))
    save_unique(stage, StageNameTaken)
    active.insert(min(position, len(active)), stage)
    _renumber(active + archived)
    Pipeline.objects.for_org(organization).filter(id=pipeline.id).update(updated_at=timezone.now())
    return stage


@transaction.atomic
def stage_update(*, organization, pipeline: Pipeline, stage: Stage, data: dict) -> Stage:
    """Rename, archive (archived: true) or restore a stage. Journeys on an archived stage stay where they are."""
    pipeline = _locked_pipeline(organization=organization, pipeline=pipeline)
    stage = Stage.objects.for_org(organization).get(id=stage.id)
    if "name" in data:
        stage.name = data["name"].strip()
    if "archived" in data:
        if data["archived"] and stage.archived_at is None:
            if stage.kind != StageKind.OPEN:
                raise PipelineStagesInvalid("The won and lost stages cannot be archived.")
            others_open = (
                Stage.objects.for_org(organization)
                .filter(pipeline=pipeline, kind=StageKind.OPEN, archived_at__isnull=True)
                .exclude(id=stage.id)
                .exists()
            )
            if not others_open:
                raise PipelineStagesInvalid("A pipeline keeps at least one active open stage.")
            stage.archived_at = timezone.now()
        elif not data["archived"]:
            stage.archived_at = None
    return save_unique(stage, StageNameTaken)


@transaction.atomic
def stages_reorder(*, organization, pipeline: Pipeline, stage_ids: list) -> Pipeline:
    """The active stages in the given order (every one of them exactly once), archived ones after."""
    pipeline = _locked_pipeline(organization=organization, pipeline=pipeline)
    stages = _ordered_stages(pipeline)
    by_id = {stage.id: stage for stage in stages if stage.archived_at is None}
    if len(stage_ids) != len(set(stage_ids)) or set(stage_ids) != set(by_id):
        raise ValidationFailed.for_field("stageIds", "must list every active stage of this pipeline exactly once")
    archived = [stage for stage in stages if stage.archived_at is not None]
    _renumber([by_id[stage_id] for stage_id in stage_ids] + archived)
    return pipeline


# --- journeys -----------------------------------------------------------------------------------------------------


# Event type → the patient timeline entry it also writes (journey.updated writes none).
TIMELINE_KINDS = {
    "journey.created": Activity.Kind.JOURNEY_CREATED,
    "journey.stage_changed": Activity.Kind.JOURNEY_STAGE_CHANGED,
    "journey.won": Activity.Kind.JOURNEY_WON,
    "journey.lost": Activity.Kind.JOURNEY_LOST,
    "journey.reopened": Activity.Kind.JOURNEY_REOPENED,
}


def _journey_event(
    *, organization, user, journey: Journey, type: str, from_stage: Stage | None = None, summary: str = "", **event
) -> None:
    """The journey's event, and for transitions its entry on the patient's timeline, in the caller's transaction.
    Both carry ids (the timeline also the treatment's and stages' names); free text such as a lost reason only
    reaches the timeline, as its summary."""
    data = {
        "patientId": str(journey.patient_id),
        "treatmentId": str(journey.treatment_id),
        "pipelineId": str(journey.pipeline_id),
        "stageId": str(journey.stage_id),
        "status": journey.status,
    }
    if from_stage is not None:
        data |= {"fromStageId": str(from_stage.id), "toStageId": str(journey.stage_id)}
    emit(
        organization=organization,
        type=type,
        subject_type="journey",
        subject_id=journey.id,
        actor=Actor.user(user) if user is not None else Actor.system(),
        data=data,
        **event,
    )
    if type in TIMELINE_KINDS:
        entry = {
            "journeyId": str(journey.id),
            "treatmentId": str(journey.treatment_id),
            "treatmentName": journey.treatment.name,
            "pipelineId": str(journey.pipeline_id),
            "stageId": str(journey.stage_id),
            "stageName": journey.stage.name,
            "status": journey.status,
        }
        if from_stage is not None:
            entry |= {"fromStageId": str(from_stage.id), "fromStageName": from_stage.name}
        timeline_record(
            organization=organization,
            user=user,
            patient_id=journey.patient_id,
            kind=TIMELINE_KINDS[type],
            summary=summary,
            data=entry,
        )


def _save_journey(journey: Journey) -> Journey:
    try:
        with transaction.atomic():
            journey.save()
    except IntegrityError:
        existing = (
            Journey.objects.for_org(journey.organization_id)
            .filter(patient_id=journey.patient_id, treatment_id=journey.treatment_id, status=JourneyStatus.OPEN)
            .exclude(id=journey.id)
            .values_list("id", flat=True)
            .first()
        )
        raise JourneyAlreadyOpen(details={"existingJourneyId": str(existing) if existing else None}) from None
    return journey


def _usable_stage(*, pipeline: Pipeline, stage: Stage) -> Stage:
    if stage.pipeline_id != pipeline.id:
        raise ValidationFailed.for_field("stageId", "is not a stage of this journey's pipeline")
    if stage.archived_at is not None:
        raise StageArchived(details={"stageId": str(stage.id)})
    if stage.kind != StageKind.OPEN:
        raise ValidationFailed.for_field("stageId", "must be an open stage: use win or lose to close a journey")
    return stage


def _first_open_stage(pipeline: Pipeline) -> Stage:
    return (
        Stage.objects.for_org(pipeline.organization_id)
        .filter(pipeline=pipeline, kind=StageKind.OPEN, archived_at__isnull=True)
        .order_by("position", "id")
        .first()
    )


def _closing_stage(pipeline: Pipeline, kind: str) -> Stage:
    return Stage.objects.for_org(pipeline.organization_id).get(pipeline=pipeline, kind=kind)


@transaction.atomic
def journey_create(*, organization, user, data: dict) -> Journey:
    practice_catalogue_seed(organization=organization)
    patient = data["patient"]
    if patient.merged_into_id is not None:
        raise PatientMerged(patient.merged_into_id)
    treatment = data.get("treatment") or treatment_ensure_builtin(organization=organization)
    if not treatment.active:
        raise TreatmentArchived(details={"treatmentId": str(treatment.id)})
    pipeline = data.get("pipeline") or pipeline_ensure_default(organization=organization)
    stage = data.get("stage")
    stage = _usable_stage(pipeline=pipeline, stage=stage) if stage else _first_open_stage(pipeline)
    journey = Journey(
        organization=organization,
        patient=patient,
        treatment=treatment,
        pipeline=pipeline,
        stage=stage,
        estimated_value=data.get("estimated_value", treatment.default_value),
        currency=data.get("currency") or treatment.currency,
        assignee=data.get("assignee", user),
        source=data.get("source", ""),
        stage_entered_at=timezone.now(),
    )
    _save_journey(journey)
    _journey_event(organization=organization, user=user, journey=journey, type="journey.created")
    return journey


def _locked(*, organization, journey: Journey) -> Journey:
    return Journey.objects.for_org(organization).select_for_update().get(id=journey.id)


UPDATABLE = {
    "treatment": "treatmentId",
    "estimated_value": "estimatedValue",
    "currency": "currency",
    "assignee": "assigneeId",
    "source": "source",
}


@transaction.atomic
def journey_update(*, organization, user, journey: Journey, data: dict) -> Journey:
    journey = _locked(organization=organization, journey=journey)
    changed = []
    for key, wire in UPDATABLE.items():
        if key not in data:
            continue
        value = data[key]
        current = getattr(journey, f"{key}_id") if key in ("treatment", "assignee") else getattr(journey, key)
        new = getattr(value, "pk", value)
        if current != new:
            if key == "treatment" and not value.active:
                raise TreatmentArchived(details={"treatmentId": str(value.id)})
            setattr(journey, key, value)
            changed.append(wire)
    if changed:
        _save_journey(journey)
        _journey_event(
            organization=organization,
            user=user,
            journey=journey,
            type="journey.updated",
            action="updated",
            changed_fields=changed,
        )
    return journey


@transaction.atomic
def journey_move(*, organization, user, journey: Journey, stage: Stage) -> Journey:
    journey = _locked(organization=organization, journey=journey)
    if journey.status != JourneyStatus.OPEN:
        raise JourneyNotOpen()
    if stage.id == journey.stage_id:
        return journey
    _usable_stage(pipeline=journey.pipeline, stage=stage)
    from_stage = journey.stage
    journey.stage, journey.stage_entered_at = stage, timezone.now()
    journey.save()
    _journey_event(
        organization=organization,
        user=user,
        journey=journey,
        type="journey.stage_changed",
        from_stage=from_stage,
        action="stage_changed",
        changed_fields=["stageId", "stageEnteredAt"],
    )
    return journey


def _close(*, organization, user, journey: Journey, kind: str, reason: str = "") -> Journey:
    journey = _locked(organization=organization, journey=journey)
    if journey.status != JourneyStatus.OPEN:
        raise JourneyNotOpen()
    now = timezone.now()
    from_stage = journey.stage
    journey.last_open_stage = from_stage
    journey.stage = _closing_stage(journey.pipeline, kind)
    journey.stage_entered_at = now
    journey.status = kind
    changed = ["status", "stageId", "stageEnteredAt"]
    if kind == JourneyStatus.WON:
        journey.won_at = now
        changed.append("wonAt")
    else:
        journey.lost_at, journey.lost_reason = now, reason
        changed += ["lostAt", "lostReason"]
    journey.save()
    _journey_event(
        organization=organization,
        user=user,
        journey=journey,
        type=f"journey.{kind}",
        from_stage=from_stage,
        summary=reason,
        action=kind,
        changed_fields=changed,
    )
    return journey


@transaction.atomic
def journey_win(*, organization, user, journey: Journey) -> Journey:
    return _close(organization=organization, user=user, journey=journey, kind=JourneyStatus.WON)


@transaction.atomic
def journey_lose(*, organization, user, journey: Journey, reason: str) -> Journey:
    return _close(organization=organization, user=user, journey=journey, kind=JourneyStatus.LOST, reason=reason)


@transaction.atomic
def journey_reopen(*, organization, user, journey: Journey, stage: Stage | None = None) -> Journey:
    """Back to open: into `stage`, else the open stage it left (if still active), else the first open stage."""
    journey = _locked(organization=organization, journey=journey)
    if journey.status == JourneyStatus.OPEN:
        raise JourneyAlreadyOpenState()
    if stage is not None:
        _usable_stage(pipeline=journey.pipeline, stage=stage)
    else:
        previous = journey.last_open_stage
        stage = previous if previous is not None and previous.archived_at is None else None
        stage = stage or _first_open_stage(journey.pipeline)
    from_stage = journey.stage
    journey.status, journey.stage = JourneyStatus.OPEN, stage
    journey.stage_entered_at = journey.reopened_at = timezone.now()
    journey.lost_reason = ""
    _save_journey(journey)
    _journey_event(
        organization=organization,
        user=user,
        journey=journey,
        type="journey.reopened",
        action="reopened",
        from_stage=from_stage,
        changed_fields=["status", "stageId", "stageEnteredAt", "reopenedAt", "lostReason"],
    )
    return journey
