"""Journeys-area routes: thin views that parse, call one selector or service, and render."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.core.errors import NotFound, ValidationFailed
from apps.core.pagination import offset_page
from apps.core.renderers import CamelCaseJSONRenderer
from apps.core.views import BaseApiView
from apps.journeys import renderers, selectors, services
from apps.journeys.api import serializers as s
from apps.journeys.models import Pipeline, Stage, Treatment

TREATMENTS = ["treatments"]


class JourneysAreaView(BaseApiView):
    renderer_classes = [CamelCaseJSONRenderer]


# --- treatments -------------------------------------------------------------------------------------------------


class TreatmentListView(JourneysAreaView):
    permission = {"GET": "treatment:read", "POST": "treatment:update"}
    scope_area = "treatments"
    error_statuses = ("409",)

    @extend_schema(
        tags=TREATMENTS,
        operation_id="treatments_list",
        parameters=[s.TreatmentListQuerySerializer],
        responses={200: s.TreatmentPageSerializer},
        summary="The practice's treatment catalogue, by name, offset paging",
        description="Archived treatments (active false) are left out unless includeArchived=true. The built-in "
        '"General enquiry" is created on the first read.',
    )
    def get(self, request):
        data = self.parse_query(s.TreatmentListQuerySerializer).validated_data
        rows, total = selectors.treatment_page(
            organization=self.organization,
            include_archived=data["include_archived"],
            category=data.get("category"),
            limit=data["limit"],
            offset=data["offset"],
        )
        items = s.TreatmentSerializer(rows, many=True).data
        return offset_page(items, total, limit=data["limit"], offset=data["offset"])

    @extend_schema(
        tags=TREATMENTS,
        request=s.TreatmentWriteSerializer,
        responses={201: s.TreatmentSerializer},
        summary="Add a treatment (name unique in the practice, case-insensitive: else 409 TREATMENT_NAME_TAKEN)",
        description="Permission treatment:update (owners, managers). name (unique in the practice, case-insensitive, "
        "else 409 TREATMENT_NAME_TAKEN), category, defaultValue (decimal ≥ 0 with two places, sent and returned as a "
        'string such as "3500.00"), currency (ISO 4217, default EUR), durationMinutes (usual appointment length, 5 '
        "to 720, default 30), active.",
    )
    def post(self, request):
        data = self.parse_body(s.TreatmentWriteSerializer).validated_data
        treatment = services.treatment_create(organization=self.organization, data=data)
        return Response(s.TreatmentSerializer(treatment).data, status=201)


class TreatmentView(JourneysAreaView):
    permission = {"GET": "treatment:read", "PATCH": "treatment:update", "DELETE": "treatment:update"}
    scope_area = "treatments"
    error_statuses = ("409",)

    @extend_schema(
        tags=TREATMENTS,
        responses={200: s.TreatmentSerializer},
        summary="Read a treatment",
        description="Permission treatment:read. One treatment; archived ones stay readable.",
    )
    def get(self, request, id):
        return Response(s.TreatmentSerializer(self.get_tenant_object(Treatment, id)).data)

    @extend_schema(
        tags=TREATMENTS,
        request=s.TreatmentWriteSerializer(partial=True),
        responses={200: s.TreatmentSerializer},
        summary="Change a treatment (active false archives, true restores)",
        description="Permission treatment:update (owners, managers). Any subset of the create fields; a name taken "
        "by another treatment answers 409 TREATMENT_NAME_TAKEN, and archiving the built-in General enquiry 409 "
        "TREATMENT_BUILTIN (it can be renamed or repriced).",
    )
    def patch(self, request, id):
        treatment = self.get_tenant_object(Treatment, id)
        data = self.parse_body(s.TreatmentWriteSerializer, partial=True).validated_data
        treatment = services.treatment_update(organization=self.organization, treatment=treatment, data=data)
        return Response(s.TreatmentSerializer(treatment).data)

    @extend_schema(
        tags=TREATMENTS,
        responses={200: s.TreatmentSerializer},
        summary="Archive a treatment (active false; it stays readable and its journeys keep it)",
        description="The built-in General enquiry cannot be archived: 409 TREATMENT_BUILTIN.",
    )
    def delete(self, request, id):
        treatment = self.get_tenant_object(Treatment, id)
        treatment = services.treatment_archive(organization=self.organization, treatment=treatment)
        return Response(s.TreatmentSerializer(treatment).data)


# --- pipelines --------------------------------------------------------------------------------------------------

PIPELINES = ["pipelines"]
PIPELINE_ACCESS = "Reading needs journey:read; changing pipelines and stages needs settings:update (owners, managers)."


class PipelinesView(JourneysAreaView):
    scope_area = "journeys"
    error_statuses = ("409",)

    def pipeline(self, id):
        pipeline = selectors.pipeline_get(organization=self.organization, pipeline_id=id)
        if pipeline is None:
            raise NotFound("No such pipeline.")
        return pipeline

    def render_pipeline(self, id, status=200):
        return Response(s.PipelineSerializer(self.pipeline(id)).data, status=status)


class PipelineListView(PipelinesView):
    permission = {"GET": "journey:read", "POST": "settings:update"}

    @extend_schema(
        tags=PIPELINES,
        operation_id="pipelines_list",
        responses={200: s.PipelineListSerializer},
        summary="The practice's pipelines with their stages, the default first",
        description="The default pipeline (New lead → Contacted → Consultation booked → Consultation attended → "
        "Plan presented → Won / Lost) is seeded on the first read. " + PIPELINE_ACCESS,
    )
    def get(self, request):
        pipelines = selectors.pipeline_list(organization=self.organization)
        return Response({"items": s.PipelineSerializer(pipelines, many=True).data})

    @extend_schema(
        tags=PIPELINES,
        request=s.PipelineCreateSerializer,
        responses={201: s.PipelineSerializer},
        summary="Create a pipeline (the standard stages unless stages are given)",
        description="Names are unique in the practice (case-insensitive): else 409 PIPELINE_NAME_TAKEN. "
        + PIPELINE_ACCESS,
    )
    def post(self, request):
        data = self.parse_body(s.PipelineCreateSerializer).validated_data
        stages = [(stage["name"].strip(), stage["kind"]) for stage in data.get("stages") or ()]
        pipeline = services.pipeline_create(
            organization=self.organization, name=data["name"], stages=stages, is_default=data["is_default"]
        )
        return self.render_pipeline(pipeline.id, status=201)


class PipelineView(PipelinesView):
    permission = {"GET": "journey:read", "PATCH": "settings:update"}

    @extend_schema(
        tags=PIPELINES, responses={200: s.PipelineSerializer}, summary="Read a pipeline", description=PIPELINE_ACCESS
    )
    def get(self, request, id):
        return self.render_pipeline(id)

    @extend_schema(
        tags=PIPELINES,
        request=s.PipelineUpdateSerializer,
        responses={200: s.PipelineSerializer},
        summary="Rename a pipeline or make it the default",
        description="isDefault false on the default answers 409 DEFAULT_PIPELINE_REQUIRED. " + PIPELINE_ACCESS,
    )
    def patch(self, request, id):
        pipeline = self.pipeline(id)
        data = self.parse_body(s.PipelineUpdateSerializer).validated_data
        services.pipeline_update(organization=self.organization, pipeline=pipeline, data=data)
        return self.render_pipeline(id)


class StageListView(PipelinesView):
    permission = {"POST": "settings:update"}

    @extend_schema(
        tags=PIPELINES,
        request=s.StageCreateSerializer,
        responses={201: s.StageSerializer},
        summary="Add an open stage to a pipeline",
        description="409 STAGE_NAME_TAKEN when the pipeline has a stage of that name (archived ones included); "
        "409 PIPELINE_STAGES_INVALID for a second won or lost stage. " + PIPELINE_ACCESS,
    )
    def post(self, request, id):
        pipeline = self.pipeline(id)
        data = self.parse_body(s.StageCreateSerializer).validated_data
        stage = services.stage_add(
            organization=self.organization,
            pipeline=pipeline,
            name=data["name"],
            kind=data["kind"],
            position=data.get("position"),
        )
        return Response(s.StageSerializer(stage).data, status=201)


class StageView(PipelinesView):
    permission = {"PATCH": "settings:update"}

    @extend_schema(
        tags=PIPELINES,
        request=s.StageUpdateSerializer,
        responses={200: s.StageSerializer},
        summary="Rename, archive or restore a stage",
        description="Archiving keeps the stage and every journey on it (still readable, still listed); new moves "
        "into an archived stage are refused. The won and lost stages and the last active open stage cannot be "
        "archived: 409 PIPELINE_STAGES_INVALID. " + PIPELINE_ACCESS,
    )
    def patch(self, request, id, stage_id):
        pipeline = self.pipeline(id)
        stage = self.get_tenant_object(
            Stage, stage_id, queryset=Stage.objects.for_org(self.organization).filter(pipeline=pipeline)
        )
        data = self.parse_body(s.StageUpdateSerializer).validated_data
        stage = services.stage_update(organization=self.organization, pipeline=pipeline, stage=stage, data=data)
        return Response(s.StageSerializer(stage).data)


class StageReorderView(PipelinesView):
    permission = {"POST": "settings:update"}

    @extend_schema(
        tags=PIPELINES,
        request=s.StageReorderSerializer,
        responses={200: s.PipelineSerializer},
        summary="Reorder a pipeline's active stages",
        description="stageIds lists every active stage exactly once (else 400); archived stages follow them. "
        + PIPELINE_ACCESS,
    )
    def post(self, request, id):
        pipeline = self.pipeline(id)
        data = self.parse_body(s.StageReorderSerializer).validated_data
        services.stages_reorder(organization=self.organization, pipeline=pipeline, stage_ids=data["stage_ids"])
        return self.render_pipeline(id)


# --- journeys ---------------------------------------------------------------------------------------------------

JOURNEYS = ["journeys"]


class JourneysView(JourneysAreaView):
    scope_area = "journeys"
    error_statuses = ("409",)

    def journey(self, id):
        journey = selectors.journey_get(organization=self.organization, journey_id=id)
        if journey is None:
            raise NotFound("No such journey.")
        return journey

    def render_journey(self, id, status=200):
        return Response(s.JourneySerializer(self.journey(id)).data, status=status)


class JourneyListView(JourneysView):
    permission = {"GET": "journey:read", "POST": "journey:create"}

    @extend_schema(
        tags=JOURNEYS,
        operation_id="journeys_list",
        parameters=[s.JourneyListQuerySerializer],
        responses={200: s.JourneyPageSerializer},
        summary="List journeys: filters, newest first, offset paging",
        description="Filters are ANDed; date ranges take ISO 8601 timestamps (…After inclusive, …Before exclusive).",
    )
    def get(self, request):
        data = dict(self.parse_query(s.JourneyListQuerySerializer).validated_data)
        limit, offset = data.pop("limit"), data.pop("offset")
        rows, total = selectors.journey_page(organization=self.organization, filters=data, limit=limit, offset=offset)
        return offset_page(s.JourneySerializer(rows, many=True).data, total, limit=limit, offset=offset)

    @extend_schema(
        tags=JOURNEYS,
        request=s.JourneyCreateSerializer,
        responses={201: s.JourneySerializer},
        summary="Start a journey for a patient (one open journey per patient and treatment)",
        description="409 JOURNEY_ALREADY_OPEN (details.existingJourneyId) when the patient already has an open "
        "journey for the treatment; 409 STAGE_ARCHIVED, TREATMENT_ARCHIVED, PATIENT_MERGED.",
    )
    def post(self, request):
        data = self.parse_body(s.JourneyCreateSerializer).validated_data
        journey = services.journey_create(organization=self.organization, user=request.user, data=data)
        return self.render_journey(journey.id, status=201)


class JourneyBoardView(JourneysView):
    permission = "journey:read"

    @extend_schema(
        tags=JOURNEYS,
        operation_id="journeys_board",
        parameters=[s.JourneyBoardQuerySerializer],
        responses={200: s.BoardSerializer},
        summary="The board of a pipeline: a column per stage with counts, value sums and the latest journeys",
        description="pipelineId defaults to the practice's default pipeline. Columns: the active stages in order, "
        "plus archived stages still holding journeys. The list's filters apply.",
    )
    def get(self, request):
        data = dict(self.parse_query(s.JourneyBoardQuerySerializer).validated_data)
        per_stage = data.pop("per_stage")
        pipeline_id = data.pop("pipeline_id", None)
        if pipeline_id is None:
            pipeline = services.pipeline_ensure_default(organization=self.organization)
        else:
            pipeline = Pipeline.objects.for_org(self.organization).filter(id=pipeline_id).first()
            if pipeline is None:
                raise ValidationFailed.for_field("pipelineId", "does not exist in this practice")
        columns = selectors.journey_board(
            organization=self.organization, pipeline=pipeline, filters=data, per_stage=per_stage
        )
        # BoardSerializer's output (it stays the documented schema), rendered from value rows.
        return Response(renderers.board(pipeline.id, columns))


class JourneyView(JourneysView):
    permission = {"GET": "journey:read", "PATCH": "journey:update"}

    @extend_schema(
        tags=JOURNEYS,
        responses={200: s.JourneySerializer},
        summary="Read a journey",
        description="Permission journey:read. One journey with its patient, treatment and stage; another practice's "
        "id answers 404.",
    )
    def get(self, request, id):
        return self.render_journey(id)

    @extend_schema(
        tags=JOURNEYS,
        request=s.JourneyUpdateSerializer,
        responses={200: s.JourneySerializer},
        summary="Change a journey's treatment, value, currency, assignee or source",
        description="Stage and status change through move, win, lose and reopen.",
    )
    def patch(self, request, id):
        journey = self.journey(id)
        data = self.parse_body(s.JourneyUpdateSerializer).validated_data
        services.journey_update(organization=self.organization, user=request.user, journey=journey, data=data)
        return self.render_journey(id)


class JourneyActionView(JourneysView):
    """A journey transition: each subclass names its body serializer and its act(journey, data) service call."""

    permission = {"POST": "journey:update"}
    body = None

    def post(self, request, id):
        journey = self.journey(id)
        data = self.parse_body(self.body).validated_data if self.body else {}
        self.act(journey, data)
        return self.render_journey(id)


class JourneyMoveView(JourneyActionView):
    body = s.JourneyMoveSerializer

    def act(self, journey, data):
        services.journey_move(organization=self.organization, user=self.request.user, journey=journey, **data)

    @extend_schema(
        tags=JOURNEYS,
        request=s.JourneyMoveSerializer,
        responses={200: s.JourneySerializer},
        summary="Move an open journey to another open stage of its pipeline",
        description="409 STAGE_ARCHIVED into an archived stage; 409 JOURNEY_NOT_OPEN for won or lost journeys.",
    )
    def post(self, request, id):
        return super().post(request, id)


class JourneyWinView(JourneyActionView):
    def act(self, journey, data):
        services.journey_win(organization=self.organization, user=self.request.user, journey=journey)

    @extend_schema(
        tags=JOURNEYS,
        request=None,
        responses={200: s.JourneySerializer},
        summary="Mark an open journey won (it moves to the pipeline's won stage)",
        description="Permission journey:update. The journey moves to its pipeline's won stage and sets wonAt. A won "
        "or lost journey answers 409 JOURNEY_NOT_OPEN. Emits journey.won.",
    )
    def post(self, request, id):
        return super().post(request, id)


class JourneyLoseView(JourneyActionView):
    body = s.JourneyLoseSerializer

    def act(self, journey, data):
        services.journey_lose(
            organization=self.organization, user=self.request.user, journey=journey, reason=data["reason"].strip()
        )

    @extend_schema(
        tags=JOURNEYS,
        request=s.JourneyLoseSerializer,
        responses={200: s.JourneySerializer},
        summary="Mark an open journey lost, with its reason (required)",
        description="Permission journey:update. Body {reason} (required): the journey moves to its pipeline's lost "
        "stage and sets lostAt; the reason is kept on the journey and the patient's timeline, never in events. A won "
        "or lost journey answers 409 JOURNEY_NOT_OPEN. Emits journey.lost.",
    )
    def post(self, request, id):
        return super().post(request, id)


class JourneyReopenView(JourneyActionView):
    def act(self, journey, data):
        services.journey_reopen(organization=self.organization, user=self.request.user, journey=journey, **data)

    def post(self, request, id):
        journey = self.journey(id)
        has_body = int(request.META.get("CONTENT_LENGTH") or 0)
        data = self.parse_body(s.JourneyReopenSerializer).validated_data if has_body else {}
        self.act(journey, data)
        return self.render_journey(id)

    post = extend_schema(
        tags=JOURNEYS,
        request=s.JourneyReopenSerializer,
        responses={200: s.JourneySerializer},
        summary="Reopen a won or lost journey (409 JOURNEY_ALREADY_OPEN if another is open for the treatment)",
        description="Permission journey:update. A won or lost journey goes back to the open stage it left, or to "
        "{stageId}; sets reopenedAt. An open journey answers 409 JOURNEY_NOT_CLOSED; another open journey of the "
        "patient for the treatment 409 JOURNEY_ALREADY_OPEN with details.existingJourneyId. Emits journey.reopened.",
    )(post)
